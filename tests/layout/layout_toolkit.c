/* SPDX-License-Identifier: Apache-2.0 */
/* The layout table as the CUDA toolkit's own cuda.h and cudaProfiler.h
 * define it. Built with -include cuda.h -include cudaProfiler.h (see
 * tests/CMakeLists.txt); nothing of cuabi is included here. */
#include <stddef.h>
#include <stdint.h>

#include "layout/layout.h"

size_t layout_toolkit(struct layout_row *rows, size_t cap)
{
#include "layout/layout_rows.inc"
}
