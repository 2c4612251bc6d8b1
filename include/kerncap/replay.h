/* kerncap replay engine: the C ABI.
 *
 * One engine restores, launches, times and compares a capture. The `kerncap` CLI calls its
 * C++ side directly; everything else (the Python package, Triton reproducers, the
 * standalone `kerncap-replay` binary) goes through this header and libkerncap_replay.so.
 * Why a C ABI and not a compiled Python extension: ctypes binds it from any Python without a
 * build step per interpreter, the same .so serves Python and C/C++ callers, and nothing about
 * the application's torch/triton versions leaks into our build (docs/engine.md).
 *
 * Conventions
 * - Every function returning int returns KC_OK (0) or a kerncap exit code (KC_E_*); the
 *   message for the calling thread's last failure is kc_last_error().
 * - Structured results are JSON text owned by the caller; free them with kc_free().
 *   Their schemas are those of `kerncap replay/validate --json` (docs/engine.md).
 * - A session holds the CUDA primary context of the capture's device current on the
 *   thread that opened it; code in the same process (Triton, torch) shares that context.
 * - Bump KC_REPLAY_ABI_VERSION on any incompatible change; bindings check it first.
 *   Calls added without changing any earlier one raise KC_REPLAY_ABI_REVISION instead, so a
 *   binding of an older revision keeps working; one that needs a newer call checks
 *   kc_abi_revision() (a library without that function is revision 0).
 *   Revision 1: kc_abi_revision, kc_evaluate, kc_evaluate_image (the evaluation loop).
 *   Revision 2: kc_evaluate_launch; kc_evaluate judges by the one judge (src/replay/judge.hpp:
 *   OUT/kerncap.toml, a variant's typed regions within tolerance, the judge's option keys)
 *   and a faulting variant is a FAIL after which the session recovers.
 *   Revision 3: kc_regime_set, kc_regime_verdict (a regime set judged regime by regime, anywhere).
 */
#ifndef KERNCAP_REPLAY_H
#define KERNCAP_REPLAY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KC_REPLAY_ABI_VERSION 1
#define KC_REPLAY_ABI_REVISION 3

#define KC_OK 0
#define KC_E_FAIL 1     /* a comparison failed (kc_compare only reports this through JSON) */
#define KC_E_INPUT 2    /* bad input: capture, options, variant image */
#define KC_E_DEVICE 3   /* CUDA error, no device, the kernel faulted */
#define KC_E_INTERNAL 70 /* a bug in kerncap (the CLI exits 70 too) */

#if defined(__GNUC__)
#define KC_API __attribute__((visibility("default")))
#else
#define KC_API
#endif

typedef struct kc_session kc_session;

/* The ABI version this library implements (compare with KC_REPLAY_ABI_VERSION). */
KC_API int kc_abi_version(void);
/* The revision of calls added within this ABI version (compare with KC_REPLAY_ABI_REVISION). */
KC_API int kc_abi_revision(void);
/* kerncap's version string ("0.1.0"). */
KC_API const char* kc_version(void);
/* Message of the calling thread's last failed call ("" if none). Valid until the next call. */
KC_API const char* kc_last_error(void);
/* Frees a string returned by this library. NULL is fine. */
KC_API void kc_free(char* s);

/* Reads and checks a capture without touching the GPU: the manifest as JSON (the same
 * object as manifest.json after validation, plus "directory"). `path`: OUT or OUT/capture. */
KC_API int kc_capture_info(const char* path, char** json_out);

/* Opens a capture for replay. `options_json` (may be NULL) keys:
 *   "cubin": path of a variant image to load instead of the captured one (null = captured)
 *   "allow_relocate": bool (default true)
 *   "progress": bool (default false)
 *   "verify": bool (default false): check the image now and every BEFORE file on the first
 *             kc_restore against the hashes recorded at capture (KC_E_INPUT naming the file)
 *   "strong": bool (default true): when the capture has a footprint (`kerncap footprint`),
 *             every kc_restore poisons the bytes the launch writes without reading them, and
 *             kc_compare's verdict is strong (a launch that skips writes fails)
 *   "recover": bool (default true): false: a variant whose fault breaks the CUDA context is
 *             not recovered in this process (no device reset, no second open); its verdict
 *             says "context_lost" at once and the session takes no more calls (a caller that
 *             replaces the process anyway, such as the evaluation pool)
 *   "prepare": bool (default false): do now what the first kc_evaluate calls would (the
 *             SASS's element types, CUPTI loaded, the comparison check loaded); no verdict changes
 * Reserves the captured addresses, creates/retains the context, maps memory, loads the image.
 * Call before anything else in the process allocates device memory. */
KC_API int kc_open(const char* path, const char* options_json, kc_session** out);
KC_API void kc_close(kc_session* s);

/* Writes every region and global back to its BEFORE state (write-only bytes poisoned in a
 * strong session); returns after the copies completed. JSON: {"bytes", "rewritten_words"}. */
KC_API int kc_restore(kc_session* s, char** json_out);

/* Where a captured device address lives in this replay (relocation applied); an address in
 * no captured region is returned unchanged. */
KC_API int kc_translate(kc_session* s, uint64_t captured_address, uint64_t* replay_address);

/* The captured parameter buffer with pointers into moved ranges rewritten (what kc_launch
 * passes); the rewriting happens in kc_restore, so call it after kc_restore.
 * Copies min(size, capacity) bytes; *size_out gets the full size. */
KC_API int kc_params(kc_session* s, uint8_t* buffer, uint64_t capacity, uint64_t* size_out);

/* The CUstream the engine launches and times on (as an integer handle). */
KC_API int kc_stream(kc_session* s, uint64_t* stream_out);

/* Launches the loaded image once with the captured parameters, geometry and attributes and
 * waits for it. */
KC_API int kc_launch(kc_session* s);

/* A launch the caller makes itself (e.g. a Triton kernel launched from Python) on `stream`.
 * Return 0 on success, non-zero to stop timing: kc_time then returns KC_E_INPUT with the
 * value in kc_last_error(). The callback must not throw or longjmp through the engine. */
typedef int (*kc_launch_fn)(void* user, uint64_t stream);

/* Times launches: `launch` == NULL times kc_launch's kernel; otherwise the callback.
 * `options_json` (may be NULL):
 *   {"warmup": 3, "iterations": 20,
 *    "restore": "written",   "written": before every launch (warm-up included, outside the
 *                            timed interval) put back the bytes a launch changes, saved when
 *                            timing starts (restore first); "full": restore every captured
 *                            byte from the capture; "none": state carries over
 *    "restore_each": false,  older spelling: true = "full" ("restore" wins when both given)
 *    "cache": "warm",        "cold": flush L2 before every launch (outside the interval)
 *    "timer": "auto"}        "auto": CUPTI kernel records, else "spin-events"; "cupti";
 *                            "spin-events": events behind a spin kernel; "events": plain
 *                            events around each launch (launch overhead included)
 * Unknown keys are ignored. Kernel time is the sum over the kernels one launch runs.
 * JSON: {"method": "cupti-activity" | "cuda-events+spin" | "cuda-events", "method_note"?,
 *        "timer", "warmup", "iterations", "restore", "restore_each", "cache",
 *        "reset"?: {"bytes", "ranges", "staging"}, "l2_flush_bytes"?, "kernels_per_launch"?,
 *        "clock": {"known", "sm_mhz_before", "sm_mhz_after", "sm_max_mhz"} | {"known": false, "why"},
 *        "median_ms", "min_ms", "max_ms", "mean_ms", "stddev_ms", "times_ms": [...]} */
KC_API int kc_time(kc_session* s, kc_launch_fn launch, void* user, const char* options_json, char** json_out);

/* Compares device memory with the application's result (BEFORE overlaid with AFTER) by the
 * spec given: a raw comparison, not a verdict (no kerncap.toml, invariants or determinism
 * check). A verdict is the judge's: kc_evaluate, kc_evaluate_image, kc_evaluate_launch.
 * Waits for the whole context first (the caller may have launched on a stream of its own).
 * `spec_json` (may be NULL):
 *   {"dtype": "bytes", "atol": null, "rtol": null,            default for every other byte
 *    "spans": [{"base": <captured address>, "size": n, "dtype": "fp32",
 *               "atol": null, "rtol": null}]}                 typed spans inside regions
 * "base" is an integer or a "0x..." string; each span must lie inside one captured region
 * (KC_E_INPUT otherwise); where spans overlap, the lower base wins. Tolerances left null come
 * from the engine's one default table for the dtype (compare::default_tolerance); bytes and
 * integers are exact. JSON: the object of `kerncap validate --json` ({"result":
 * "PASS"|"FAIL", "line", "spec", "regions": [{..., "pieces": [...]}]}, docs/engine.md). A
 * FAIL is a successful call (KC_OK) with "result": "FAIL".
 * With spec_json NULL the engine uses OUT/compare.json when the capture lies in a reproducer
 * that has one (the Triton generator writes the kernel's pointer element types there), so
 * `kerncap validate` and a reproducer's own check give the same verdict. */
KC_API int kc_compare(kc_session* s, const char* spec_json, char** json_out);

/* The evaluation loop (revision 1): judges one image in the open session the way `kerncap
 * validate --cubin IMAGE [--fuzz N]` judges it, and times it, without a process per image.
 * The image is loaded into the session (checked like --cubin: the captured kernel present,
 * its parameter layout unchanged, the module globals it uses bound; refused with KC_E_INPUT
 * and a message otherwise, the session staying usable), launched on memory as restored,
 * compared with AFTER, and optionally timed and fuzzed against the captured image.
 * Between evaluations only the bytes a launch changes are put back, from a copy on the GPU
 * (pinned host memory when GPU memory is short); a full restore from the capture follows a
 * failed comparison, fuzz trials, a change of module globals, or any other call that
 * launched or restored in between. The captured image (same hash) and the variant evaluated
 * last stay loaded; a new variant replaces (unloads) the previous one.
 * `image_path`: a cubin, fatbin or PTX file; NULL: the captured image.
 * The verdict is the one judge's (src/replay/judge.hpp), as `kerncap validate` reaches it:
 * OUT/kerncap.toml's [tolerances], [invariants] and [timing] min_speedup apply, a variant's
 * regions typed by the kernel's signature compare within their dtype's tolerance.
 * `options_json` (may be NULL):
 *   {"time": true,            time the image (kc_time's keys: "warmup" (default 1),
 *                             "iterations" (default 10), "restore", "cache", "timer")
 *    "fuzz": 0, "seed": 1,    fuzz trials against the captured image (needs a footprint)
 *    "spec": null,            kc_compare's spec object; null: OUT/compare.json or byte-exact
 *    "keep_loaded": true,     false: unload the variant's module after the evaluation
 *    the judge's keys, as validate's flags: "dtype", "atol", "rtol", "exact" (a variant byte
 *    for byte), "check_determinism" (false: no determinism check on a mismatch),
 *    "invariants" ("no_nan,must_write"), "no_invariants", "tolerance" (["3:atol=1e-3"]),
 *    "min_speedup" (time the captured image and the variant, interleaved)}
 * JSON: the verdict document, `kerncap validate --json`'s object ("result", "line",
 * "regions", "spec", "strength", "policy", "invariants"?, "fault", "kernel", "image",
 * "device", "fuzz"?, "speedup"?, ...) plus "timing" (kc_time's object, or null),
 * "image_hash", "captured_image", "loaded" (a module was loaded for it), "memory"
 * ("written": the changed bytes were put back; "full": restored from the capture),
 * "recovered", "seconds". A FAIL is KC_OK with "result": "FAIL". A variant that faults is a
 * FAIL too, with "fault" naming the CUDA error. Where the fault left the context unusable
 * (CUDA's sticky errors) the device's primary context is reset (everything of that context in
 * this process, torch's memory for one, is gone with it) and the capture opened again where
 * the driver allows ("recovered": true). Measured on the H200's driver it does not: the
 * answer says "context_lost": true, the session is closed, and further calls fail; continue
 * in a new process (Python's Session does so in a `kerncap serve` child by itself). */
KC_API int kc_evaluate(kc_session* s, const char* image_path, const char* options_json, char** json_out);
/* The same for an image held in memory (`size` bytes at `image`); `description` names it in
 * messages and in the result's "image" (NULL: "image bytes"). */
KC_API int kc_evaluate_image(kc_session* s, const uint8_t* image, uint64_t size, const char* description,
                             const char* options_json, char** json_out);
/* Revision 2. The same judge for a launch the caller makes itself (a Triton kernel launched
 * from Python): memory as restored, then `launch(user, stream)` (it must launch on `stream`
 * or wait for its own), then the comparison, determinism check (which replays the captured
 * image and calls `launch` again), timing ("time") and speed-up ("min_speedup") with the
 * callback, as kc_evaluate does for a variant image; "fuzz" is refused (a usage error). The result's "image" is "the caller's launch". */
KC_API int kc_evaluate_launch(kc_session* s, kc_launch_fn launch, void* user, const char* options_json,
                              char** json_out);

/* Revision 3. The regime set in `out_dir` (OUT/regimes.json, checked as `kerncap validate` checks
 * it): its index as JSON ({"format": "kerncap-regimes", "kernel", "regimes": [{"dir", "grid",
 * "block", "launches", "time_ns", "share", "captured", "why", ...}], ...}, docs/capture.md, "Regimes"), each
 * captured regime with "path", its capture directory, and "judging": how each regime is judged
 * ({"speedup": true, "cache": "blend" unless the caller chose a state, "min_speedup":
 * "weighted": a caller's bar applies to the set's weighted figure, not to each regime). KC_E_INPUT for a set of several kernels
 * (regime-kernels.json: the message names each kernel's set), none captured, or a damaged index. */
KC_API int kc_regime_set(const char* out_dir, char** json_out);
/* Revision 3. A regime set's verdict (OUT/regimes.json, `kerncap extract KERNEL --regimes`),
 * the document `kerncap validate OUT [--cubin V] --json` prints, from the one judge's verdict
 * on each regime, wherever those were reached (each regime's own session, on any GPU: the
 * evaluation pool spreads them). No GPU and no session: it reads the set's index only.
 * `outcomes_json`: [{"dir": "NN-...", "verdict": <kc_evaluate's document, judged with
 * "speedup": true for a variant> | null, "error": "why there is no verdict"}], every captured
 * regime exactly once, in any order (KC_E_INPUT otherwise, naming the regime).
 * `options_json` (may be NULL): {"min_speedup": x (on the weighted speed-up; leave it out of
 * the per-regime judging), "variant": true (false: the captured image, no speed-ups)}.
 * JSON: {"format": "kerncap-regime-verdict", "version", "kernel", "regimes": [...], "failed",
 * "regressed", "weighted_speedup", "weighted_speedup_ratio", "app_projection", "coverage",
 * "timed_share", "min_speedup", "result", "line"} (docs/capture.md, "Regimes"). */
KC_API int kc_regime_verdict(const char* out_dir, const char* outcomes_json, const char* options_json,
                             char** json_out);

#ifdef __cplusplus
}
#endif

#endif /* KERNCAP_REPLAY_H */
