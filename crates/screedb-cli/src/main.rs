//! The `screedb` command.

fn main() {
    println!("screedb {}", env!("CARGO_PKG_VERSION"));
}
