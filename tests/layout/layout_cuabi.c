/* SPDX-License-Identifier: Apache-2.0 */
/* The layout table as cuabi's generated headers define it. */
#include <stddef.h>
#include <stdint.h>

#include <cuabi.h>

#include "layout/layout.h"

size_t layout_cuabi(struct layout_row *rows, size_t cap)
{
#include "layout/layout_rows.inc"
}
