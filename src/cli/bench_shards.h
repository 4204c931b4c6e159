/* src/cli/bench_shards.h: `stoker bench --shards SRC` -- the reader call that makes the built-in
 * pipelines read a WebDataset tar-shard copy of the data set (bench_shards.c). */
#ifndef STOKER_CLI_BENCH_SHARDS_H
#define STOKER_CLI_BENCH_SHARDS_H

/* The text of a readers.webdataset(...) call over the shards SRC names -- a directory (its *.tar
 * files, in name order, as `stoker datagen DIR --shards N` writes them to DIR/shards) or a file
 * listing one local path, http(s):// URL or pipe:COMMAND per line (blank lines and lines starting
 * with '#' skipped) -- with the components datagen writes (ext ["jpg;jpeg", "cls"], label_ext
 * "cls"), shuffled when `shuffle`. No index: shards stream from their start. malloc'd (free it);
 * NULL after printing why. *count gets the number of shards. */
char *stk_cli_bench_shards_reader(const char *src, int shuffle, int *count);

#endif
