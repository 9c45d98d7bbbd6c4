// SPDX-License-Identifier: Apache-2.0
// Links libcuabi.so.1. Where from, first match wins:
//   CUABI_LIB_DIR=/abs/dir          the folder holding libcuabi.so
//   pkg-config --variable=libdir cuabi (PKG_CONFIG_PATH finds an installed cuabi.pc)
//   otherwise the linker's default search path.
// No C is compiled and no bindings are generated here: src/lib.rs is written by
// tools/gen_bindings.py from driver_api.json.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CUABI_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dir = env::var("CUABI_LIB_DIR").ok().filter(|d| !d.is_empty()).or_else(|| {
        let out = Command::new("pkg-config").args(["--variable=libdir", "cuabi"]).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let dir = text.trim().to_string();
        if out.status.success() && !dir.is_empty() {
            Some(dir)
        } else {
            None
        }
    });
    if let Some(dir) = dir {
        println!("cargo:rustc-link-search=native={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=cuabi");
}
