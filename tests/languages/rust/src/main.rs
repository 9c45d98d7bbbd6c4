// SPDX-License-Identifier: Apache-2.0
//! cuabi from Rust through the cuabi-sys crate: y = a*x + y with a PTX kernel.
//! usage: saxpy PTX_FILE. Without a driver it prints the reason and exits with 3.
use cuabi_sys::*;
use std::ffi::{CStr, CString};
use std::os::raw::c_void;
use std::process::exit;
use std::ptr::null_mut;

fn describe(rc: CUresult) -> String {
    // SAFETY: cuabi_error_name/string return static NUL-terminated text for any code.
    unsafe {
        format!(
            "{}: {}",
            CStr::from_ptr(cuabi_error_name(rc)).to_string_lossy(),
            CStr::from_ptr(cuabi_error_string(rc)).to_string_lossy()
        )
    }
}

fn check(rc: CUresult, what: &str) {
    if rc != CUDA_SUCCESS {
        eprintln!("{}: {}", what, describe(rc));
        exit(1);
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: saxpy PTX_FILE");
    let ptx = CString::new(std::fs::read(&path).expect("cannot read the PTX file")).unwrap();
    const N: usize = 1000;
    let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut y = vec![2.0f32; N];
    unsafe {
        let rc = cuabi_cuInit(0);
        if rc != CUDA_SUCCESS {
            println!("cuInit: {}", describe(rc));
            exit(3);
        }
        let mut device: CUdevice = 0;
        let mut context: CUcontext = null_mut();
        let mut module: CUmodule = null_mut();
        let mut saxpy: CUfunction = null_mut();
        check(cuabi_cuDeviceGet(&mut device, 0), "cuDeviceGet");
        check(cuabi_cuCtxCreate(&mut context, null_mut(), 0, device), "cuCtxCreate");
        check(cuabi_cuModuleLoadData(&mut module, ptx.as_ptr() as *const c_void), "cuModuleLoadData");
        check(cuabi_cuModuleGetFunction(&mut saxpy, module, b"saxpy\0".as_ptr() as *const _), "cuModuleGetFunction");
        let bytes = N * std::mem::size_of::<f32>();
        let (mut dx, mut dy): (CUdeviceptr, CUdeviceptr) = (0, 0);
        check(cuabi_cuMemAlloc(&mut dx, bytes), "cuMemAlloc");
        check(cuabi_cuMemAlloc(&mut dy, bytes), "cuMemAlloc");
        check(cuabi_cuMemcpyHtoD(dx, x.as_ptr() as *const c_void, bytes), "cuMemcpyHtoD");
        check(cuabi_cuMemcpyHtoD(dy, y.as_ptr() as *const c_void, bytes), "cuMemcpyHtoD");
        let mut a = 0.5f32;
        let mut n = N as i32;
        let mut params: [*mut c_void; 4] = [
            &mut a as *mut f32 as *mut c_void,
            &mut dx as *mut CUdeviceptr as *mut c_void,
            &mut dy as *mut CUdeviceptr as *mut c_void,
            &mut n as *mut i32 as *mut c_void,
        ];
        let grid = ((N + 127) / 128) as u32;
        check(
            cuabi_cuLaunchKernel(saxpy, grid, 1, 1, 128, 1, 1, 0, CU_STREAM_LEGACY, params.as_mut_ptr(), null_mut()),
            "cuLaunchKernel",
        );
        check(cuabi_cuCtxSynchronize(), "cuCtxSynchronize");
        check(cuabi_cuMemcpyDtoH(y.as_mut_ptr() as *mut c_void, dy, bytes), "cuMemcpyDtoH");
        check(cuabi_cuMemFree(dx), "cuMemFree");
        check(cuabi_cuMemFree(dy), "cuMemFree");
        check(cuabi_cuModuleUnload(module), "cuModuleUnload");
        check(cuabi_cuCtxDestroy(context), "cuCtxDestroy");
    }
    for i in 0..N {
        if y[i] != 0.5 * i as f32 + 2.0 {
            println!("saxpy: y[{}] is {}", i, y[i]);
            exit(1);
        }
    }
    println!("saxpy on {} elements: correct", N);
}
