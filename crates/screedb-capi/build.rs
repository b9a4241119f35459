//! Gives libscreedb its SONAME, `libscreedb.so.1` (docs/c-api.md): a program linked against it
//! records that name, whatever file name it was linked through (`-lleveldb` included), and
//! loads ScreeDB's library, not whichever `libleveldb.so` comes first on the search path.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libscreedb.so.1");
    }
}
