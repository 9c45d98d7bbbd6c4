/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for cuabi_call: signature parsing, the call-interface
 * cache and the call itself, with fuzzed signatures, versions and names.
 *
 * Input: [selector][version lo][version hi][signature ...]['\0' name ...]
 *   - an even selector calls the entry point selector/2 (mod the table) of
 *     tests/generated/entry_points.h by its driver name; an odd one calls
 *     the name after the NUL (any bytes, usually unknown to the driver);
 *   - the version is the two bytes as a signed 16-bit number (negative ones
 *     must be refused);
 *   - the signature is the bytes up to the NUL, at most 64.
 * The driver is the fake in record mode: every entry point is a closure that
 * only records raw argument bits, so a well-formed signature that does not
 * match the entry point's real one is still safe to call. Every argument
 * points at the same zeroed storage, large enough for the largest struct a
 * signature may pass by value.
 *
 * Build: cmake -DCUABI_BUILD_FUZZ=ON -DCUABI_SANITIZE=address,undefined with
 * clang; run: fuzz_call -max_total_time=60 fuzz/corpus.
 */
#define _GNU_SOURCE
#include <cuabi.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const driver_names[] = {
#define CUABI_ENTRY(index, name, driver_name, version, ptds_version, signature) driver_name,
#include "generated/entry_points.h"
#undef CUABI_ENTRY
};
#define NAME_COUNT (sizeof driver_names / sizeof driver_names[0])

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("FAKECUDA_MODE", "record", 1);
    if (getenv("CUABI_LIBCUDA") == NULL)
        setenv("CUABI_LIBCUDA", FAKE_DRIVER_PATH, 1);
    if (cuabi_driver_status() != CUDA_SUCCESS)
        abort(); /* the harness is misconfigured, not cuabi broken */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    unsigned selector = data[0];
    int32_t version = (int16_t)(uint16_t)(data[1] | (unsigned)data[2] << 8);
    data += 3;
    size -= 3;

    char signature[65];
    size_t sig_len = 0;
    while (sig_len < size && sig_len < sizeof signature - 1 && data[sig_len] != 0) {
        signature[sig_len] = (char)data[sig_len];
        sig_len++;
    }
    signature[sig_len] = '\0';

    char name[129];
    const char *call_name = driver_names[(selector / 2) % NAME_COUNT];
    if (selector & 1) {
        size_t at = sig_len + 1, len = 0;
        while (at + len < size && len < sizeof name - 1 && data[at + len] != 0) {
            name[len] = (char)data[at + len];
            len++;
        }
        name[len] = '\0';
        call_name = name;
    }

    /* Every parameter reads zeros: a scalar, or a struct by value of at most
     * CUABI_CALL_MAX_STRUCT_MEMBERS members of 8 bytes, with padding. */
    static const uint64_t zeros[2 * CUABI_CALL_MAX_STRUCT_MEMBERS];
    void *args[64];
    for (size_t k = 0; k < 64; k++)
        args[k] = (void *)zeros;

    CUresult rc = cuabi_call(call_name, version, signature, args);
    if (version < 0 && rc != CUDA_ERROR_INVALID_VALUE && rc != CUABI_ERROR_BAD_SIGNATURE)
        abort(); /* a negative version must never reach the driver */
    /* A character that is in no signature's alphabet must be refused as such. */
    for (size_t k = 0; k < sig_len; k++) {
        if (!strchr("BHiIqQzpfd{}[]0123456789", signature[k]) && rc != CUABI_ERROR_BAD_SIGNATURE)
            abort();
    }
    return 0;
}
