/* SPDX-License-Identifier: Apache-2.0 */
/* The family and tracing scenarios of tests/test_loading.c's table (tests/loading_families.c). */
#ifndef CUABI_TEST_LOADING_FAMILIES_H
#define CUABI_TEST_LOADING_FAMILIES_H

void family_env_override(void);
void family_explicit_path(void);
void family_explicit_beats_env(void);
void family_relative_env(void);
void family_missing_file(void);
void family_too_old(void);
void family_function_missing(void);
void family_already_in_process(void);
void family_system_search(void);
void family_wrong_soname(void);
void family_absent(void);
void family_real_library(void);
void driver_load_library(void);
void trace_to_stderr(void);
void trace_to_file(void);
void trace_relative_path(void);
void trace_bad_value(void);
void trace_unopenable_file(void);
void trace_program_wins(void);

/* Whether the fake driver CUABI_LIBCUDA names is in the process. */
int cuabi__test_driver_loaded(void);

#endif
