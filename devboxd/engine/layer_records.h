/* devboxd snapshot and blueprint records: the registry (persisted under
 * the state directory), their owners' share of the layer store and a
 * create's snapshot_id / blueprint_id / blueprint_name.
 *
 * A devbox's spec keeps its whole layer chain ("_layers": [{path, owner}],
 * topmost first); each boot mounts the chain (layers.h).  Snapshots and
 * blueprints share the layer store: a deleted record's layer stays while
 * other records' chains or live devboxes use it.
 *
 * Locking: one registry lock (layer_records_lock) guards the snapshot and
 * blueprint records and the layer store; it may be taken before eng->lock,
 * never after. */
#ifndef DEVBOXD_LAYER_RECORDS_H
#define DEVBOXD_LAYER_RECORDS_H

#include <cjson/cJSON.h>

#include "engine.h"
#include "layers.h"

void layer_records_lock(
    struct engine *eng); /* also loads the records on first use */
/* At engine stop, before the devboxes go: waits for snapshot copies, stops
 * builds (they end failed) and frees the registry. */
void layer_records_fini(void);
void layer_records_unlock(void);
/* Registry of records (registry lock held): arrays of record objects, newest
 * first. */
cJSON *layer_records_snapshots_locked(void);
cJSON *layer_records_blueprints_locked(void);
const char *layer_records_state_dir(void);
/* Writes a record to <state>/<kind>/<id>/<file>. */
int layer_records_save_record(const char *kind, const char *file,
                              const cJSON *rec);
/* At start, once the devboxes are loaded: loads the records (interrupted
 * builds and snapshots fail) and frees the layer dirs nothing references
 * (a delete cut off by a kill, or an orphan). */
void layer_records_start(struct engine *eng);
/* Registry lock held: resolves snapshot_id / blueprint_id / blueprint_name
 * of a create body into spec (_layers, ids, blueprint defaults). 0 or an
 * HTTP status with err. */
int layer_records_resolve_create(struct engine *eng, const cJSON *body,
                                 cJSON *spec, char *err, size_t errlen);

#endif
