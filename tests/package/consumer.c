/* SPDX-License-Identifier: Apache-2.0 */
/* Links libcuabi.so.1 through an installed package and asks the driver its version. */
#include <cuabi.h>

#include <stdio.h>

int main(void)
{
    int version = 0;
    CUresult rc = cuabi_driver_version(&version);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "%s\n%s", cuabi_error_name(rc), cuabi_driver_report());
        return 1;
    }
    printf("cuabi %u.%u.%u, driver %d\n", cuabi_version() >> 16, (cuabi_version() >> 8) & 0xFF,
           cuabi_version() & 0xFF, version);
    return 0;
}
