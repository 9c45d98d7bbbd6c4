// SPDX-License-Identifier: Apache-2.0

// cuabi from Go through the cuabi package (cgo): y = a*x + y with a PTX kernel.
// usage: saxpy PTX_FILE. Without a driver it prints the reason and exits with 3.
package main

import (
	"fmt"
	"os"
	"unsafe"

	"cuabi"
)

func check(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	ptx, err := os.ReadFile(os.Args[1])
	check(err, "reading the PTX")
	ptx = append(ptx, 0)
	if err := cuabi.CuInit(0); err != nil {
		fmt.Printf("cuInit: %v\n", err)
		os.Exit(3)
	}
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), 2
	}
	var device cuabi.CUdevice
	var context cuabi.CUcontext
	var module cuabi.CUmodule
	var saxpy cuabi.CUfunction
	check(cuabi.CuDeviceGet(&device, 0), "cuDeviceGet")
	check(cuabi.CuCtxCreate(&context, nil, 0, device), "cuCtxCreate")
	check(cuabi.CuModuleLoadData(&module, unsafe.Pointer(&ptx[0])), "cuModuleLoadData")
	check(cuabi.CuModuleGetFunction(&saxpy, module, "saxpy"), "cuModuleGetFunction")
	bytes := uint64(n * 4)
	var dx, dy cuabi.CUdeviceptr
	check(cuabi.CuMemAlloc(&dx, bytes), "cuMemAlloc")
	check(cuabi.CuMemAlloc(&dy, bytes), "cuMemAlloc")
	check(cuabi.CuMemcpyHtoD(dx, unsafe.Pointer(&x[0]), bytes), "cuMemcpyHtoD")
	check(cuabi.CuMemcpyHtoD(dy, unsafe.Pointer(&y[0]), bytes), "cuMemcpyHtoD")
	// The kernel's parameters must be in C memory: cgo forbids passing Go pointers
	// to Go pointers. cuMemAllocHost gives page-locked host memory for them.
	var block unsafe.Pointer
	check(cuabi.CuMemAllocHost(unsafe.Pointer(&block), 64), "cuMemAllocHost")
	values := (*[8]uint64)(block)
	*(*float32)(unsafe.Pointer(&values[0])) = 0.5
	values[1], values[2] = dx, dy
	*(*int32)(unsafe.Pointer(&values[3])) = n
	params := (*[4]unsafe.Pointer)(unsafe.Pointer(&values[4]))
	for k := 0; k < 4; k++ {
		params[k] = unsafe.Pointer(&values[k])
	}
	check(cuabi.CuLaunchKernel(saxpy, (n+127)/128, 1, 1, 128, 1, 1, 0, cuabi.CU_STREAM_LEGACY,
		unsafe.Pointer(params), nil), "cuLaunchKernel")
	check(cuabi.CuCtxSynchronize(), "cuCtxSynchronize")
	check(cuabi.CuMemcpyDtoH(unsafe.Pointer(&y[0]), dy, bytes), "cuMemcpyDtoH")
	check(cuabi.CuMemFreeHost(block), "cuMemFreeHost")
	check(cuabi.CuMemFree(dx), "cuMemFree")
	check(cuabi.CuMemFree(dy), "cuMemFree")
	check(cuabi.CuModuleUnload(module), "cuModuleUnload")
	check(cuabi.CuCtxDestroy(context), "cuCtxDestroy")
	for i := range y {
		if y[i] != 0.5*float32(i)+2 {
			fmt.Printf("saxpy: y[%d] is %g\n", i, y[i])
			os.Exit(1)
		}
	}
	fmt.Printf("saxpy on %d elements: correct\n", n)
}
