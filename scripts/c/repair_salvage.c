/* Repair salvage, side by side: the same program linked against LevelDB's libleveldb and against
 * libscreedb (scripts/repair-vs-leveldb.sh). It writes N keys into one table, flips one byte in
 * the middle of that table, runs leveldb_repair_db and counts the keys that come back intact.
 *
 * Usage: repair_salvage DIR N [compress]   (DIR must not exist; `compress` selects
 * leveldb_snappy_compression: Snappy in LevelDB, LZ4 in ScreeDB)
 * Prints: "<N> keys, flipped byte <offset> of <file> (<size> bytes): kept <K>, with a wrong
 * value <W>" (W: keys repair kept with a value that is not the one written). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "leveldb/c.h"

static void check(char *err, const char *what) {
    if (err != NULL) {
        fprintf(stderr, "%s: %s\n", what, err);
        exit(1);
    }
}

static void value_of(int i, char *buf, size_t cap) {
    snprintf(buf, cap, "value-%d-%s", i, "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s DIR N [compress]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int n = atoi(argv[2]);
    char *err = NULL;
    leveldb_options_t *opt = leveldb_options_create();
    leveldb_options_set_create_if_missing(opt, 1);
    leveldb_options_set_write_buffer_size(opt, 256 << 20);
    leveldb_options_set_compression(opt, argc == 4 ? leveldb_snappy_compression
                                                   : leveldb_no_compression);
    leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
    leveldb_readoptions_t *ro = leveldb_readoptions_create();

    leveldb_t *db = leveldb_open(opt, dir, &err);
    check(err, "open");
    char key[32], val[128];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "key%06d", i);
        value_of(i, val, sizeof val);
        leveldb_put(db, wo, key, strlen(key), val, strlen(val), &err);
        check(err, "put");
    }
    leveldb_close(db);
    /* Reopening writes the log's contents into one level-0 table in both engines. */
    db = leveldb_open(opt, dir, &err);
    check(err, "reopen");
    leveldb_close(db);

    /* The one table: *.ldb or *.sst. */
    char table[4096] = "";
    DIR *d = opendir(dir);
    struct dirent *e;
    int tables = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && (strcmp(e->d_name + len - 4, ".ldb") == 0 ||
                        strcmp(e->d_name + len - 4, ".sst") == 0)) {
            snprintf(table, sizeof table, "%s/%s", dir, e->d_name);
            tables++;
        }
    }
    closedir(d);
    if (tables != 1) {
        fprintf(stderr, "expected one table, found %d\n", tables);
        return 1;
    }
    struct stat st;
    stat(table, &st);
    long offset = (long)st.st_size / 2;
    FILE *f = fopen(table, "r+b");
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);

    leveldb_repair_db(opt, dir, &err);
    check(err, "repair");
    db = leveldb_open(opt, dir, &err);
    check(err, "open after repair");
    int kept = 0, garbled = 0;
    for (int i = 0; i < n; i++) {
        size_t vlen;
        snprintf(key, sizeof key, "key%06d", i);
        value_of(i, val, sizeof val);
        char *got = leveldb_get(db, ro, key, strlen(key), &vlen, &err);
        check(err, "get");
        if (got != NULL && vlen == strlen(val) && memcmp(got, val, vlen) == 0) {
            kept++;
        } else if (got != NULL) {
            garbled++;
        }
        leveldb_free(got);
    }
    leveldb_close(db);
    printf("%d keys, flipped byte %ld of %s (%ld bytes): kept %d, with a wrong value %d\n", n,
           offset, table, (long)st.st_size, kept, garbled);
    leveldb_readoptions_destroy(ro);
    leveldb_writeoptions_destroy(wo);
    leveldb_options_destroy(opt);
    return 0;
}
