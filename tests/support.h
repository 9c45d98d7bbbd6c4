/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support.h - what the cmocka tests share: the fake driver's query functions,
 * checks that print result names, and module images for the fake.
 *
 * cmocka wants <stdarg.h>, <stddef.h>, <stdint.h> and <setjmp.h> before
 * <cmocka.h>; this header includes them in that order.
 */
#ifndef CUABI_TEST_SUPPORT_H
#define CUABI_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <cuabi.h>

#include "fake/fakecuda.h"

/* Exit code ctest reads as "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt). */
#define TEST_SKIPPED 77

/* The fake driver's absolute path, from CUABI_LIBCUDA (set by ctest). */
const char *fake_path(void);
/* A function the fake exports (fakecuda_*); fails the test when missing. */
void *fake_symbol(const char *name);

uint64_t fake_live_allocations(void);
uint64_t fake_live_objects(const char *kind);
uint64_t fake_launch_count(void);
int fake_request_info(const char *name, struct fakecuda_request *out);

/* A function a family's fake library exports (fakefam_*): the fake that the
 * family's environment variable names (CUABI_LIBNVRTC, ...; ctest sets them),
 * opened as cuabi opens it.  Fails the test when missing. */
void *family_fake_symbol(int32_t library, const char *name);
/* The environment variable of a library (CUABI_LIBRARY_*): CUABI_LIBCUDA, CUABI_LIBNVRTC... */
const char *library_env(int32_t library);

/* libcuabi's cuabi_<name>, found with dlsym; fails the test when it is not exported. */
void *exported_forwarder(const char *name);

/* One argument value, whatever its signature letter. */
union sentinel_value {
    uint8_t B;
    uint16_t H;
    int32_t i;
    uint32_t u;
    int64_t q;
    uint64_t Q;
    size_t z;
    void *p;
    float f;
    double d;
};
/* A value no other (entry, argument) pair uses, and the raw bits a library must see for
 * it (integers zero-extended from their width, floats as bits).  Pointers never point
 * anywhere: nothing may look behind them. */
void sentinel(unsigned entry, unsigned arg, char letter, union sentinel_value *v, uint64_t *bits);

/* Compares two CUresults and, on a mismatch, names both. */
#define assert_cu(expected, actual) \
    assert_cu_at((CUresult)(expected), (CUresult)(actual), #actual, __FILE__, __LINE__)
void assert_cu_at(CUresult expected, CUresult actual, const char *what, const char *file, int line);
#define check_cu(call) assert_cu(CUDA_SUCCESS, call)

/* Fails unless haystack contains needle, printing both. */
#define assert_contains(haystack, needle) \
    assert_contains_at((haystack), (needle), __FILE__, __LINE__)
void assert_contains_at(const char *haystack, const char *needle, const char *file, int line);

/* cuInit + primary context of device 0 made current; returns it. */
CUcontext setup_primary_context(void);
void release_primary_context(void);
/* The same two as cmocka group setup and teardown functions. */
int group_setup_primary_context(void **state);
int group_release_primary_context(void **state);

/* A module image in the fake's text format naming all kernels the tests use
 * and one 16-byte global "counter" (tests/fake/README.md). */
extern const char fake_module_image[];

#endif
