/* src/cli/datagen_shards.h: `stoker datagen DIR --shards N` -- the sharded copy of a data set. */
#ifndef STOKER_CLI_DATAGEN_SHARDS_H
#define STOKER_CLI_DATAGEN_SHARDS_H

#include <stdint.h>

/* Writes DIR/shards/shard-NNNNN.tar (+ .idx, DALI's wds2idx v1.2 format) holding every image of
 * DIR's class folders as "<class>/<stem>.jpg" plus "<class>/<stem>.cls" (the class index as
 * text), in an order shuffled by seed, split into `shards` parts of equal size (+-1). Returns
 * the exit status. */
int stk_cli_datagen_shards(const char *dir, long shards, uint64_t seed);

#endif
