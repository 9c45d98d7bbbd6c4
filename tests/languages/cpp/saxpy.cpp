// SPDX-License-Identifier: Apache-2.0
// cuabi from C++ (C++11 and later): y = a*x + y with a PTX kernel, through a small RAII
// wrapper that turns a failing CUresult into an exception naming the code.
// usage: saxpy PTX_FILE. Without a driver it prints the reason and exits with 3.
#include <cuabi.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct cuda_error : std::runtime_error {
    CUresult code;
    cuda_error(CUresult rc, const std::string &what)
        : std::runtime_error(what + ": " + cuabi_error_name(rc) + ": " + cuabi_error_string(rc)), code(rc) {}
};

void check(CUresult rc, const char *what)
{
    if (rc != CUDA_SUCCESS)
        throw cuda_error(rc, what);
}

class device_buffer {
public:
    explicit device_buffer(std::size_t bytes) { check(cuabi_cuMemAlloc(&ptr_, bytes), "cuMemAlloc"); }
    ~device_buffer() { cuabi_cuMemFree(ptr_); }
    device_buffer(const device_buffer &) = delete;
    device_buffer &operator=(const device_buffer &) = delete;
    CUdeviceptr &get() { return ptr_; }

private:
    CUdeviceptr ptr_ = 0;
};

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s PTX_FILE\n", argv[0]);
        return 2;
    }
    std::ifstream file(argv[1]);
    std::stringstream text;
    text << file.rdbuf();
    const std::string ptx = text.str();
    try {
        check(cuabi_cuInit(0), "cuInit");
    } catch (const cuda_error &e) {
        std::printf("%s\n", e.what());
        return 3;
    }
    try {
        const int n = 1000;
        std::vector<float> x(n), y(n, 2.0f);
        for (int i = 0; i < n; i++)
            x[i] = static_cast<float>(i);
        CUdevice device;
        CUcontext context;
        CUmodule module;
        CUfunction saxpy;
        check(cuabi_cuDeviceGet(&device, 0), "cuDeviceGet");
        check(cuabi_cuCtxCreate(&context, nullptr, 0, device), "cuCtxCreate");
        check(cuabi_cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData");
        check(cuabi_cuModuleGetFunction(&saxpy, module, "saxpy"), "cuModuleGetFunction");
        {
            const std::size_t bytes = n * sizeof(float);
            device_buffer dx(bytes), dy(bytes);
            check(cuabi_cuMemcpyHtoD(dx.get(), x.data(), bytes), "cuMemcpyHtoD");
            check(cuabi_cuMemcpyHtoD(dy.get(), y.data(), bytes), "cuMemcpyHtoD");
            float a = 0.5f;
            int count = n;
            void *params[] = {&a, &dx.get(), &dy.get(), &count};
            check(cuabi_cuLaunchKernel(saxpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, CU_STREAM_LEGACY, params,
                                       nullptr),
                  "cuLaunchKernel");
            check(cuabi_cuCtxSynchronize(), "cuCtxSynchronize");
            check(cuabi_cuMemcpyDtoH(y.data(), dy.get(), bytes), "cuMemcpyDtoH");
        }
        check(cuabi_cuModuleUnload(module), "cuModuleUnload");
        check(cuabi_cuCtxDestroy(context), "cuCtxDestroy");
        for (int i = 0; i < n; i++) {
            if (y[i] != 0.5f * static_cast<float>(i) + 2.0f) {
                std::printf("saxpy: y[%d] is %g\n", i, static_cast<double>(y[i]));
                return 1;
            }
        }
        std::printf("saxpy on %d elements: correct\n", n);
    } catch (const cuda_error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
