/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuabi/result_codes.h - cuabi's own result codes: the one list.
 *
 * Every fact about a code lives in one row of CUABI_RESULT_CODE_MAP below:
 *
 *   X(NAME, value, KIND, "what happened", "what to do")
 *
 * and everything else is expanded from it: the enumerators CUABI_ERROR_NAME
 * of CUresult (tools/gen_driver_api.py writes them into cuabi/driver_types.h),
 * the names and texts of cuabi_error_name()/cuabi_error_string(), the advice
 * in cuabi_driver_report(), the table in driver_api.json and the Python
 * exceptions.  KIND says where the code comes from:
 *
 *   LOAD    the driver could not be loaded (cuabi_driver_report() says why);
 *   LOOKUP  the loaded driver cannot provide one entry point;
 *   USAGE   the caller asked cuabi for something it cannot do.
 *
 * The values lie in 100000..100999, which CUDA does not use, so a code can
 * come back from any cuabi_cuXxx call as well as from the own API.  Frozen: a
 * row never changes its value or meaning; new rows are only appended, with
 * the next free value.  Included by cuabi.h; plain C with no dependencies,
 * so that generators can read it with the C preprocessor alone.
 */
#ifndef CUABI_RESULT_CODES_H
#define CUABI_RESULT_CODES_H

/* No CUDA result code is this large; cuabi's are above it. */
#define CUABI_ERROR_BASE 100000

#define CUABI_RESULT_CODE_MAP(X)                                                                \
    X(DRIVER_NOT_FOUND, 100001, LOAD,                                                           \
      "no CUDA driver (libcuda.so.1) could be opened; see cuabi_driver_report()",               \
      "install the NVIDIA driver (it provides libcuda.so.1), or, if it is installed "           \
      "somewhere unusual, set CUABI_LIBCUDA=/abs/path/libcuda.so.1; cuabi_driver_report() "     \
      "lists every place tried and why each failed")                                            \
    X(DRIVER_STUB, 100002, LOAD,                                                                \
      "only the CUDA toolkit's stub libcuda was found; it is for linking and cannot run "       \
      "anything",                                                                               \
      "install the NVIDIA driver, or set CUABI_LIBCUDA=/abs/path/libcuda.so.1 to the real "     \
      "driver; take the toolkit's stubs folder out of LD_LIBRARY_PATH")                         \
    X(DRIVER_UNUSABLE, 100003, LOAD,                                                            \
      "a libcuda was opened but has no cuGetProcAddress_v2: the driver is older than "          \
      "CUDA 12.0, or the library is not a CUDA driver",                                         \
      "install an NVIDIA driver for CUDA 12.0 or newer, or set "                                \
      "CUABI_LIBCUDA=/abs/path/libcuda.so.1 to one")                                            \
    X(ENTRY_POINT_NOT_FOUND, 100004, LOOKUP,                                                    \
      "the loaded CUDA driver does not provide this entry point",                               \
      "nothing to fix in cuabi: this driver lacks the feature (a newer driver may have it); "   \
      "other entry points keep working")                                                        \
    X(DRIVER_TOO_OLD, 100005, LOOKUP,                                                           \
      "the loaded CUDA driver provides this entry point only for a newer CUDA version; "        \
      "update the driver",                                                                      \
      "update the NVIDIA driver")                                                               \
    X(BAD_ENVIRONMENT, 100006, LOAD,                                                            \
      "a cuabi environment variable has an invalid value (CUABI_LIBCUDA and the families' "     \
      "CUABI_LIBNVRTC, CUABI_LIBNVJITLINK, CUABI_LIBNVVM, CUABI_LIBNVML must be absolute "      \
      "paths, CUABI_PER_THREAD_DEFAULT_STREAM must be 0 or 1, CUABI_TRACE 0, 1 or an absolute " \
      "path); see cuabi_driver_report() or cuabi_library_report()",                             \
      "fix or unset the variable that the report quotes (CUABI_LIBCUDA must be an "             \
      "absolute path such as /usr/lib/x86_64-linux-gnu/libcuda.so.1; "                          \
      "CUABI_PER_THREAD_DEFAULT_STREAM must be 0 or 1; CUABI_TRACE 1 for the standard error, "  \
      "or the absolute path of a file to append to)")                                           \
    X(BAD_SIGNATURE, 100007, USAGE,                                                             \
      "the signature string given to cuabi_call is malformed (one per parameter, at most 32: "  \
      "a letter B H i I q Q z p f d, or {...} for a struct by value holding letters, [N] for "  \
      "N bytes and nested {...}, at most 1024 members in all)",                                 \
      "correct the signature string: one letter or {...} per parameter, as cuabi.h describes; " \
      "driver_api.json gives every entry point's signature")                                    \
    X(ALREADY_LOADED, 100008, USAGE,                                                            \
      "the driver is already loaded; a different driver path or default stream mode can "       \
      "no longer be chosen",                                                                    \
      "choose the driver and the default stream mode before the first CUDA call of the "        \
      "process")                                                                                \
    X(LIBRARY_MISSING, 100009, LOAD,                                                            \
      "the library of a family (NVRTC, nvJitLink, NVVM or NVML) could not be opened; see "      \
      "cuabi_library_report()",                                                                 \
      "install the library, or name it: its environment variable (CUABI_LIBNVRTC, "             \
      "CUABI_LIBNVJITLINK, CUABI_LIBNVVM, CUABI_LIBNVML) set to its absolute path, or "         \
      "cuabi_load_library(); cuabi_library_report() lists every place tried and why each "      \
      "failed")                                                                                 \
    X(LIBRARY_TOO_OLD, 100010, LOAD,                                                            \
      "the library of a family was found but is older than cuabi supports (nvJitLink of "       \
      "CUDA 12, NVRTC before 12.0); see cuabi_library_report()",                                \
      "install a newer one (cuabi_library_report() says which version was found and which "     \
      "is needed), or name a newer one as for CUABI_ERROR_LIBRARY_MISSING")                     \
    X(FUNCTION_MISSING, 100011, LOOKUP,                                                         \
      "the loaded library of a family does not provide this function (it is older than the "    \
      "header cuabi takes the function from); see cuabi_library_report()",                      \
      "nothing to fix in cuabi: a newer version of the library has it; its other functions "    \
      "keep working")

#endif /* CUABI_RESULT_CODES_H */
