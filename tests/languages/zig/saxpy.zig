// SPDX-License-Identifier: Apache-2.0
// cuabi from Zig (0.13) through @cImport of cuabi.h: y = a*x + y with a PTX kernel.
// usage: saxpy PTX_FILE. Without a driver it prints the reason and exits with 3.
const std = @import("std");
const c = @cImport(@cInclude("cuabi.h"));

fn describe(rc: c.CUresult) [2][*:0]const u8 {
    return .{ c.cuabi_error_name(rc), c.cuabi_error_string(rc) };
}

fn check(rc: c.CUresult, what: []const u8) void {
    if (rc != c.CUDA_SUCCESS) {
        const text = describe(rc);
        std.debug.print("{s}: {s}: {s}\n", .{ what, text[0], text[1] });
        std.process.exit(1);
    }
}

pub fn main() !void {
    var gpa = std.heap.GeneralPurposeAllocator(.{}){};
    const allocator = gpa.allocator();
    const args = try std.process.argsAlloc(allocator);
    defer std.process.argsFree(allocator, args);
    const ptx = try std.fs.cwd().readFileAllocOptions(allocator, args[1], 1 << 20, null, 1, 0);
    defer allocator.free(ptx);
    const stdout = std.io.getStdOut().writer();

    const rc = c.cuabi_cuInit(0);
    if (rc != c.CUDA_SUCCESS) {
        const text = describe(rc);
        try stdout.print("cuInit: {s}: {s}\n", .{ text[0], text[1] });
        std.process.exit(3);
    }
    const n = 1000;
    var x: [n]f32 = undefined;
    var y: [n]f32 = undefined;
    for (0..n) |i| {
        x[i] = @floatFromInt(i);
        y[i] = 2;
    }
    var device: c.CUdevice = 0;
    var context: c.CUcontext = null;
    var module: c.CUmodule = null;
    var saxpy: c.CUfunction = null;
    check(c.cuabi_cuDeviceGet(&device, 0), "cuDeviceGet");
    check(c.cuabi_cuCtxCreate(&context, null, 0, device), "cuCtxCreate");
    check(c.cuabi_cuModuleLoadData(&module, ptx.ptr), "cuModuleLoadData");
    check(c.cuabi_cuModuleGetFunction(&saxpy, module, "saxpy"), "cuModuleGetFunction");
    const bytes = n * @sizeOf(f32);
    var dx: c.CUdeviceptr = 0;
    var dy: c.CUdeviceptr = 0;
    check(c.cuabi_cuMemAlloc(&dx, bytes), "cuMemAlloc");
    check(c.cuabi_cuMemAlloc(&dy, bytes), "cuMemAlloc");
    check(c.cuabi_cuMemcpyHtoD(dx, &x, bytes), "cuMemcpyHtoD");
    check(c.cuabi_cuMemcpyHtoD(dy, &y, bytes), "cuMemcpyHtoD");
    var a: f32 = 0.5;
    var count: c_int = n;
    var params = [_]?*anyopaque{ @ptrCast(&a), @ptrCast(&dx), @ptrCast(&dy), @ptrCast(&count) };
    check(c.cuabi_cuLaunchKernel(saxpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, c.CU_STREAM_LEGACY, &params, null), "cuLaunchKernel");
    check(c.cuabi_cuCtxSynchronize(), "cuCtxSynchronize");
    check(c.cuabi_cuMemcpyDtoH(&y, dy, bytes), "cuMemcpyDtoH");
    check(c.cuabi_cuMemFree(dx), "cuMemFree");
    check(c.cuabi_cuMemFree(dy), "cuMemFree");
    check(c.cuabi_cuModuleUnload(module), "cuModuleUnload");
    check(c.cuabi_cuCtxDestroy(context), "cuCtxDestroy");
    for (0..n) |i| {
        const want = 0.5 * @as(f32, @floatFromInt(i)) + 2.0;
        if (y[i] != want) {
            try stdout.print("saxpy: y[{d}] is {d}\n", .{ i, y[i] });
            std.process.exit(1);
        }
    }
    try stdout.print("saxpy on {d} elements: correct\n", .{n});
}
