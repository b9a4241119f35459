//! The machine's physical memory, which bounds the stores whose new tables are mapped in as
//! they are written (`Options::populate_new_tables`).

/// Bytes of physical memory; 0 where the system does not say.
#[cfg(target_os = "linux")]
pub(super) fn physical_memory_bytes() -> u64 {
    // SAFETY: sysconf takes an integer, touches no memory of ours and returns -1 for a name
    // the system does not know (mapped to 0 below).
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(pages)
        .unwrap_or(0)
        .saturating_mul(u64::try_from(page_size).unwrap_or(0))
}

/// Elsewhere no table is populated (the option documents that it is Linux-only).
#[cfg(not(target_os = "linux"))]
pub(super) fn physical_memory_bytes() -> u64 {
    0
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use crate::Db;
    use crate::fs::mapped_resident_bytes;
    use crate::options::Options;
    use crate::table::CompressionType;

    #[test]
    fn a_linux_machine_has_memory() {
        let bytes = super::physical_memory_bytes();
        assert!(bytes >= 64 << 20, "{bytes} bytes of physical memory");
    }

    /// Bytes of the tables a new database flushed (with `populate_new_tables` as given) and how
    /// many of them are mapped to pages in this process, before anything reads them.
    fn flushed_tables(populate: bool) -> (u64, u64) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let options = Options {
            create_if_missing: true,
            populate_new_tables: populate,
            compression: CompressionType::None,
            ..Options::default()
        };
        let db = Db::open(&dir, options).unwrap();
        for i in 0..20_000u32 {
            db.put(format!("key{i:08}").as_bytes(), [i as u8; 100])
                .unwrap();
        }
        db.flush().unwrap();
        let (mut bytes, mut mapped) = (0, 0);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sst") {
                bytes += std::fs::metadata(&path).unwrap().len();
                mapped += mapped_resident_bytes(&path);
            }
        }
        drop(db);
        (bytes, mapped)
    }

    #[test]
    fn a_flushed_table_is_mapped_in_only_with_the_option() {
        let (bytes, mapped) = flushed_tables(true);
        assert!(bytes > 1 << 20, "{bytes} bytes of tables");
        assert!(mapped >= bytes, "{mapped} of {bytes} bytes mapped");
        let (bytes, mapped) = flushed_tables(false);
        assert!(
            mapped < bytes / 2,
            "{mapped} of {bytes} bytes mapped without the option"
        );
    }
}
