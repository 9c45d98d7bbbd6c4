/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small Node-API addon: cuabi_call() for JavaScript, so that a script can call any driver
 * entry point by the name, version and signature driver_api.json gives it. It needs no npm
 * package and no node-gyp: cc -shared against Node's own headers (node_api.h).
 *
 *   call(name, version, signature, args) -> CUresult (a number)
 *     args[k] per signature letter: i I B H: a number; q Q z: a BigInt or a number;
 *     f d: a number; p: a Buffer or typed array (its memory), a BigInt (an address or
 *     handle) or null; {...}: a Buffer holding the struct's bytes.
 *   errorName(code), errorString(code) -> string; address(buffer) -> BigInt
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <cuabi.h>

#include <stdint.h>
#include <string.h>

#define MAX_ARGS CUABI_CALL_MAX_PARAMS

static napi_value fail(napi_env env, const char *message)
{
    napi_throw_type_error(env, NULL, message);
    return NULL;
}

/* The top-level parameters of a signature: one letter each, or '{' for a struct. */
static int parameter_letters(const char *signature, char *letters)
{
    int n = 0, depth = 0;
    for (const char *c = signature; *c != '\0'; c++) {
        if (depth == 0) {
            if (n == MAX_ARGS)
                return -1;
            letters[n++] = *c;
        }
        if (*c == '{')
            depth++;
        else if (*c == '}')
            depth--;
    }
    return n;
}

/* The memory of a Buffer or typed array, or NULL when value is neither. */
static void *buffer_data(napi_env env, napi_value value)
{
    bool is = false;
    void *data = NULL;
    size_t length = 0;
    if (napi_is_buffer(env, value, &is) == napi_ok && is) {
        napi_get_buffer_info(env, value, &data, &length);
        return data;
    }
    if (napi_is_typedarray(env, value, &is) == napi_ok && is) {
        napi_typedarray_type type;
        napi_value array;
        size_t offset;
        napi_get_typedarray_info(env, value, &type, &length, &data, &array, &offset);
        return data;
    }
    return NULL;
}

static int to_u64(napi_env env, napi_value value, uint64_t *out)
{
    napi_valuetype type;
    napi_typeof(env, value, &type);
    if (type == napi_bigint) {
        bool lossless;
        return napi_get_value_bigint_uint64(env, value, out, &lossless) == napi_ok ? 0 : -1;
    }
    if (type == napi_number) {
        int64_t v;
        if (napi_get_value_int64(env, value, &v) != napi_ok)
            return -1;
        *out = (uint64_t)v;
        return 0;
    }
    return -1;
}

static napi_value call(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc != 4)
        return fail(env, "call(name, version, signature, args)");
    char name[128], signature[256];
    size_t len;
    int32_t version;
    if (napi_get_value_string_utf8(env, argv[0], name, sizeof name, &len) != napi_ok ||
        napi_get_value_string_utf8(env, argv[2], signature, sizeof signature, &len) != napi_ok ||
        napi_get_value_int32(env, argv[1], &version) != napi_ok)
        return fail(env, "call: name and signature must be strings, version a number");
    char letters[MAX_ARGS];
    int n = parameter_letters(signature, letters);
    uint32_t given = 0;
    napi_get_array_length(env, argv[3], &given);
    if (n < 0 || (uint32_t)n != given)
        return fail(env, "call: args must hold one value per parameter of the signature");

    union {
        uint8_t B;
        uint16_t H;
        uint32_t I;
        uint64_t Q;
        float f;
        double d;
        void *p;
    } values[MAX_ARGS];
    void *args[MAX_ARGS];
    for (int k = 0; k < n; k++) {
        napi_value v;
        napi_get_element(env, argv[3], (uint32_t)k, &v);
        napi_valuetype type;
        napi_typeof(env, v, &type);
        uint64_t u = 0;
        double d = 0;
        args[k] = &values[k];
        switch (letters[k]) {
        case '{':
            args[k] = buffer_data(env, v);
            if (args[k] == NULL)
                return fail(env, "call: a struct by value is passed as a Buffer of its bytes");
            break;
        case 'p':
            if (type == napi_null || type == napi_undefined)
                values[k].p = NULL;
            else if (type == napi_bigint && to_u64(env, v, &u) == 0)
                values[k].p = (void *)(uintptr_t)u;
            else if ((values[k].p = buffer_data(env, v)) == NULL)
                return fail(env, "call: a pointer is a Buffer, a typed array, a BigInt or null");
            break;
        case 'f':
        case 'd':
            if (napi_get_value_double(env, v, &d) != napi_ok)
                return fail(env, "call: f and d take numbers");
            if (letters[k] == 'f')
                values[k].f = (float)d;
            else
                values[k].d = d;
            break;
        default: /* the integer letters */
            if (to_u64(env, v, &u) != 0)
                return fail(env, "call: integers are numbers or BigInts");
            if (letters[k] == 'B')
                values[k].B = (uint8_t)u;
            else if (letters[k] == 'H')
                values[k].H = (uint16_t)u;
            else if (letters[k] == 'i' || letters[k] == 'I')
                values[k].I = (uint32_t)u;
            else
                values[k].Q = u;
        }
    }
    CUresult rc = cuabi_call(name, version, signature, args);
    napi_value result;
    napi_create_uint32(env, (uint32_t)rc, &result);
    return result;
}

static napi_value text_of(napi_env env, napi_callback_info info, const char *(*lookup)(CUresult))
{
    size_t argc = 1;
    napi_value argv[1];
    uint32_t code = 0;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc != 1 || napi_get_value_uint32(env, argv[0], &code) != napi_ok)
        return fail(env, "a result code (a number) is needed");
    napi_value text;
    napi_create_string_utf8(env, lookup((CUresult)code), NAPI_AUTO_LENGTH, &text);
    return text;
}

static napi_value error_name(napi_env env, napi_callback_info info)
{
    return text_of(env, info, cuabi_error_name);
}

static napi_value error_string(napi_env env, napi_callback_info info)
{
    return text_of(env, info, cuabi_error_string);
}

static napi_value address(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    void *data = argc == 1 ? buffer_data(env, argv[0]) : NULL;
    if (data == NULL)
        return fail(env, "address(buffer): a Buffer or typed array");
    napi_value result;
    napi_create_bigint_uint64(env, (uint64_t)(uintptr_t)data, &result);
    return result;
}

static napi_value init(napi_env env, napi_value exports)
{
    const napi_property_descriptor functions[] = {
        { "call", NULL, call, NULL, NULL, NULL, napi_default, NULL },
        { "errorName", NULL, error_name, NULL, NULL, NULL, napi_default, NULL },
        { "errorString", NULL, error_string, NULL, NULL, NULL, napi_default, NULL },
        { "address", NULL, address, NULL, NULL, NULL, napi_default, NULL },
    };
    napi_define_properties(env, exports, sizeof functions / sizeof functions[0], functions);
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
