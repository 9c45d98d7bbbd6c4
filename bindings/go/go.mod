// SPDX-License-Identifier: Apache-2.0
module cuabi

go 1.19
