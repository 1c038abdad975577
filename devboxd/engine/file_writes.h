/* Temporary files of file writes into a devbox (file_writes.c).
 *
 * write_file_contents and uploads write a hidden ".NAME.TID.devboxd-tmp"
 * next to the target and rename it over; devboxd killed in between (kill -9,
 * a crash, a power cut) used to leave that file in the devbox for ever.
 * Each write notes its temporary file under the devbox's record directory
 * (devboxes/ID/writes/) first and drops the note once the rename or unlink
 * is done; whatever notes remain when the devbox's sandbox next starts (a
 * devboxd start boots it again, or a resume) name files that are removed. */
#ifndef DEVBOXD_FILE_WRITES_H
#define DEVBOXD_FILE_WRITES_H

#include "engine.h"
#include "sandbox.h"

/* Notes that the write to path (a devbox path, as the API got it) uses the
 * temporary file tmp in path's directory. Returns the note's path (pass it
 * to file_writes_end), or NULL when it could not be written (the write goes
 * on: the note only serves the clean-up). */
char *file_writes_begin(struct engine *eng, const char *box_id,
                        const char *path, const char *tmp);
/* The temporary file is gone (renamed or unlinked): drops and frees note. */
void file_writes_end(char *note);
/* Removes the temporary files the notes of box name and the notes, once
 * its sandbox sb started (before any API call can use it). Returns how
 * many files were removed. */
int file_writes_clean(struct engine *eng, struct devbox *box,
                      struct sandbox *sb);

#endif
