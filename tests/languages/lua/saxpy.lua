-- SPDX-License-Identifier: Apache-2.0
-- cuabi from LuaJIT through the cuabi module: y = a*x + y with a PTX kernel.
-- usage: luajit saxpy.lua PTX_FILE. Without a driver it prints the reason and exits with 3.
local cuabi = require("cuabi")
local ffi = cuabi.ffi
local C = cuabi.C

local f = assert(io.open(arg[1], "rb"))
local ptx = f:read("*a")
f:close()

local rc = C.cuabi_cuInit(0)
if rc ~= 0 then
  print(string.format("cuInit: %s: %s", cuabi.error_name(rc), cuabi.error_string(rc)))
  os.exit(3)
end

local n = 1000
local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
for i = 0, n - 1 do
  x[i], y[i] = i, 2
end
local device = ffi.new("CUdevice[1]")
local context = ffi.new("CUcontext[1]")
local module = ffi.new("CUmodule[1]")
local saxpy = ffi.new("CUfunction[1]")
cuabi.cuDeviceGet(device, 0)
cuabi.cuCtxCreate(context, nil, 0, device[0])
cuabi.cuModuleLoadData(module, ptx)
cuabi.cuModuleGetFunction(saxpy, module[0], "saxpy")
local bytes = n * ffi.sizeof("float")
local dx, dy = ffi.new("CUdeviceptr[1]"), ffi.new("CUdeviceptr[1]")
cuabi.cuMemAlloc(dx, bytes)
cuabi.cuMemAlloc(dy, bytes)
cuabi.cuMemcpyHtoD(dx[0], x, bytes)
cuabi.cuMemcpyHtoD(dy[0], y, bytes)
local a, count = ffi.new("float[1]", 0.5), ffi.new("int[1]", n)
local params = ffi.new("void *[4]", a, dx, dy, count)
cuabi.cuLaunchKernel(saxpy[0], math.floor((n + 127) / 128), 1, 1, 128, 1, 1, 0, ffi.cast("CUstream", C.CU_STREAM_LEGACY), params, nil)
cuabi.cuCtxSynchronize()
cuabi.cuMemcpyDtoH(y, dy[0], bytes)
cuabi.cuMemFree(dx[0])
cuabi.cuMemFree(dy[0])
cuabi.cuModuleUnload(module[0])
cuabi.cuCtxDestroy(context[0])
for i = 0, n - 1 do
  if y[i] ~= 0.5 * i + 2 then
    print(string.format("saxpy: y[%d] is %g", i, y[i]))
    os.exit(1)
  end
end
print(string.format("saxpy on %d elements: correct", n))
