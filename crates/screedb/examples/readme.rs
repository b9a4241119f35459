//! The README's example: open, write, read, scan, close, destroy.

use screedb::{Db, Options, WriteBatch, WriteOptions};

fn main() -> screedb::Result<()> {
    let dir = std::env::temp_dir().join(format!("screedb-readme-example-{}", std::process::id()));
    let db = Db::open(&dir, Options::default().create_if_missing(true))?;
    db.put(b"apple", b"red")?;
    let mut batch = WriteBatch::new();
    batch.put(b"banana", b"yellow").delete(b"apple");
    db.write(batch, &WriteOptions::synced())?; // durable when this returns
    assert_eq!(db.get(b"banana")?, Some(b"yellow".to_vec()));
    for item in db.range(b"a".as_slice()..b"z".as_slice())? {
        let (key, value) = item?;
        println!(
            "{} = {}",
            String::from_utf8_lossy(&key),
            String::from_utf8_lossy(&value)
        );
    }
    db.close()?;
    Db::destroy(&dir, &Options::default())
}
