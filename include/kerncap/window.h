/* kerncap's window engine, C ABI (docs/window.md "Replacements"): a window of launches
 * (`kerncap window extract`) opened for replay in this process, what its replay's buffers are,
 * and its validation by the one judge with a run of operations replaced by the caller's own
 * launch (a Python callable: python/kerncap/window.py). Exported by libkerncap_replay.so beside
 * include/kerncap/replay.h, with its conventions: every call returns KC_OK or a KC_E_* code,
 * the message in kc_last_error(); JSON results are freed with kc_free(). The window's
 * verdict document is `kerncap window validate --json`'s. */
#ifndef KERNCAP_WINDOW_H
#define KERNCAP_WINDOW_H

#include "kerncap/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kc_window kc_window;

/* Opens the window capture at `path` (OUT or OUT/capture): its memory reserved at the captured
 * addresses where the driver allows, BEFORE restorable. Open it before anything else in the
 * process allocates device memory. options_json (NULL or an object):
 *   "progress": bool (default false), "allow_relocate": bool (default true). */
KC_API int kc_window_open(const char* path, const char* options_json, kc_window** out);
KC_API void kc_window_close(kc_window* w);

/* The window and its replay's buffers: {"from", "to", "stream", "ops": [{"index", "kind",
 * "mangled"?, "grid"?, "block"?, "params" (hex, as launched)?, "pointers": [{"offset",
 * "address", "region", "region_offset"}]?, "dst"?, "src"?, "bytes"?}], "regions": [{"id",
 * "address" (in this replay), "captured_address", "size", "kind", "changed_bytes"}]}. */
KC_API int kc_window_info(kc_window* w, char** json_out);

/* `kerncap window validate`: restore, probe the write-only bytes (strong), replay and judge,
 * name the failing regions' last writers, time the window (and the captured one beside it).
 * `replace` (may be NULL): called with the replay's stream each time the window runs, in place
 * of operations options["replace"]["from"]..["to"]; it must enqueue its work on that stream and
 * not synchronise the device; a non-zero return stops the validation (KC_E_INPUT).
 * options_json: {"live_out": "all"|"auto"|"3,5", "replace": {"from", "to", "name"},
 *   "replace_file": "FROM..TO=launches.json", "swaps": [{"op", "image"}], "dtype", "atol",
 *   "rtol", "exact", "weak", "warmup", "iterations", "text": bool (add "text": the CLI's
 *   lines)}. A FAIL is a document with "result": "FAIL", not an error. */
KC_API int kc_window_validate(kc_window* w, const char* options_json, kc_launch_fn replace, void* user,
                              char** json_out);

/* From inside kc_window_validate's `replace` callback only: enqueues operation `op` (one of the
 * operations the callback replaces) as captured on `stream`, so that a replacement can keep one
 * of them (a fused SiLU·multiply keeps the GEMM between them). */
KC_API int kc_window_enqueue_op(kc_window* w, uint64_t op, uint64_t stream);

#ifdef __cplusplus
}
#endif

#endif
