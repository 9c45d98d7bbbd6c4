# SPDX-License-Identifier: Apache-2.0
# cmake -DMESSAGE=... -P fail.cmake: a ctest entry that fails, saying why.
message(FATAL_ERROR "${MESSAGE}")
