// SPDX-License-Identifier: Apache-2.0
// cuabi from Java through JNA: y = a*x + y with a PTX kernel.
// usage: java -cp jna.jar:. -Djna.library.path=<prefix>/lib Saxpy PTX_FILE
// Without a driver it prints the reason and exits with 3.
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.file.Files;
import java.nio.file.Paths;

public class Saxpy {
    /** The functions of libcuabi.so.1 this program calls, with JNA's types for C's. */
    public interface Cuabi extends Library {
        Cuabi LIB = Native.load("cuabi", Cuabi.class);

        String cuabi_error_name(int code);
        String cuabi_error_string(int code);
        int cuabi_cuInit(int flags);
        int cuabi_cuDeviceGet(IntByReference device, int ordinal);
        int cuabi_cuCtxCreate(PointerByReference ctx, Pointer params, int flags, int device);
        int cuabi_cuCtxDestroy(Pointer ctx);
        int cuabi_cuCtxSynchronize();
        int cuabi_cuModuleLoadData(PointerByReference module, String image);
        int cuabi_cuModuleUnload(Pointer module);
        int cuabi_cuModuleGetFunction(PointerByReference function, Pointer module, String name);
        int cuabi_cuMemAlloc(LongByReference dptr, long bytes);
        int cuabi_cuMemFree(long dptr);
        int cuabi_cuMemcpyHtoD(long dst, float[] src, long bytes);
        int cuabi_cuMemcpyDtoH(float[] dst, long src, long bytes);
        int cuabi_cuLaunchKernel(Pointer f, int gx, int gy, int gz, int bx, int by, int bz,
                                 int sharedBytes, Pointer stream, Pointer params, Pointer extra);
    }

    static final Cuabi C = Cuabi.LIB;

    static String describe(int rc) {
        return C.cuabi_error_name(rc) + ": " + C.cuabi_error_string(rc);
    }

    static void check(int rc, String what) {
        if (rc != 0) {
            System.err.println(what + ": " + describe(rc));
            System.exit(1);
        }
    }

    public static void main(String[] args) throws Exception {
        String ptx = new String(Files.readAllBytes(Paths.get(args[0])), "UTF-8");
        int rc = C.cuabi_cuInit(0);
        if (rc != 0) {
            System.out.println("cuInit: " + describe(rc));
            System.exit(3);
        }
        final int n = 1000;
        float[] x = new float[n], y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = i;
            y[i] = 2;
        }
        IntByReference device = new IntByReference();
        PointerByReference context = new PointerByReference();
        PointerByReference module = new PointerByReference();
        PointerByReference saxpy = new PointerByReference();
        check(C.cuabi_cuDeviceGet(device, 0), "cuDeviceGet");
        check(C.cuabi_cuCtxCreate(context, null, 0, device.getValue()), "cuCtxCreate");
        check(C.cuabi_cuModuleLoadData(module, ptx), "cuModuleLoadData");
        check(C.cuabi_cuModuleGetFunction(saxpy, module.getValue(), "saxpy"), "cuModuleGetFunction");
        long bytes = 4L * n;
        LongByReference dx = new LongByReference(), dy = new LongByReference();
        check(C.cuabi_cuMemAlloc(dx, bytes), "cuMemAlloc");
        check(C.cuabi_cuMemAlloc(dy, bytes), "cuMemAlloc");
        check(C.cuabi_cuMemcpyHtoD(dx.getValue(), x, bytes), "cuMemcpyHtoD");
        check(C.cuabi_cuMemcpyHtoD(dy.getValue(), y, bytes), "cuMemcpyHtoD");
        // The kernel's parameter values, and the array of pointers to them (kernelParams).
        Memory values = new Memory(32);
        values.setFloat(0, 0.5f);
        values.setLong(8, dx.getValue());
        values.setLong(16, dy.getValue());
        values.setInt(24, n);
        Memory params = new Memory(4 * Native.POINTER_SIZE);
        for (int k = 0; k < 4; k++)
            params.setPointer((long) k * Native.POINTER_SIZE, values.share(8L * k));
        Pointer legacyStream = new Pointer(1); // CU_STREAM_LEGACY
        check(C.cuabi_cuLaunchKernel(saxpy.getValue(), (n + 127) / 128, 1, 1, 128, 1, 1, 0, legacyStream,
                                     params, null), "cuLaunchKernel");
        check(C.cuabi_cuCtxSynchronize(), "cuCtxSynchronize");
        check(C.cuabi_cuMemcpyDtoH(y, dy.getValue(), bytes), "cuMemcpyDtoH");
        check(C.cuabi_cuMemFree(dx.getValue()), "cuMemFree");
        check(C.cuabi_cuMemFree(dy.getValue()), "cuMemFree");
        check(C.cuabi_cuModuleUnload(module.getValue()), "cuModuleUnload");
        check(C.cuabi_cuCtxDestroy(context.getValue()), "cuCtxDestroy");
        for (int i = 0; i < n; i++) {
            if (y[i] != 0.5f * i + 2.0f) {
                System.out.println("saxpy: y[" + i + "] is " + y[i]);
                System.exit(1);
            }
        }
        System.out.println("saxpy on " + n + " elements: correct");
    }
}
