"""A stand-in for the one judge (the evaluation pool's `judge=` seam): candidates are tiny
byte strings (or files holding them) that say what the judge does with them, so the pool,
the CLI and the Dask path can be tested without a GPU.

    b"pass..."    PASS                       b"fail..."  FAIL (a mismatch)
    b"fault..."   the worker process dies (os._exit(139), as a segfault would end it)
    b"hang..."    sleeps far past any time limit
    b"refuse..."  EngineError, exit code 2 (an image the session cannot run)
    b"lost..."    FAIL with "context_lost": the worker must be replaced afterwards
On a regime set (each regime's capture a directory NN-name), a word KIND@DIR makes the
candidate KIND on regime DIR only (the directory's name, or what its file fake-regime says) ("pass fail@01-b" fails on 01-b), and xS (x2.0) is its
speed-up whenever the judge is asked for one (speedup=True): "speedup": {"speedup": S, the
captured and variant medians}.
Open options: open_delay=S sleeps S seconds first (a worker slow to open); exit_after_close=True
ends the worker at once after close(), as the engine's judge does; max_opens=N refuses to open
(EngineError) once N judges have opened on this capture (counted by files in it, across
processes); a verdict's "open_options" lists what the judge was opened with.
"""
import os
import time

from kerncap import engine

OPENED = "fake-judge-opened"
REGIME_MARKER = "fake-regime"  # a file naming the regime a capture directory is (tests of regime sets)  # a file the judge writes into the capture dir when told to count opens


class FakeJudge:
    def __init__(self, path, **open_options):
        manifest = os.path.join(path, "capture", "manifest.json")
        if not os.path.isfile(manifest):
            raise engine.EngineError(f"{path}: not a capture (no capture/manifest.json)", engine.E_INPUT)
        self.path = path
        self.open_options = dict(open_options)
        time.sleep(float(open_options.get("open_delay", 0)))
        if "max_opens" in open_options:
            opened = [f for f in os.listdir(path) if f.startswith(OPENED)]
            if len(opened) >= open_options["max_opens"]:
                raise engine.EngineError(f"{path}: opened {len(opened)} times already", engine.E_DEVICE)
            with open(os.path.join(path, f"{OPENED}.{os.getpid()}"), "w"):
                pass
        self.device_name = "Fake GPU " + os.environ.get("CUDA_VISIBLE_DEVICES", "default")
        self.exit_after_close = bool(open_options.get("exit_after_close"))  # as the engine's judge
        self.context_lost = False

    def evaluate(self, image, name=None, **options):
        if isinstance(image, (bytes, bytearray)):
            data = bytes(image)
        elif image is None:
            data = b"pass captured"
        else:
            with open(image, "rb") as f:
                data = f.read()
        words = data.decode(errors="replace").split(" ")
        kind = words[0]
        here = os.path.basename(os.path.normpath(self.path))
        marker = os.path.join(self.path, REGIME_MARKER)  # the regime's name where the capture travelled (Dask)
        if os.path.isfile(marker):
            with open(marker) as f:
                here = f.read().strip()
        for w in words[1:]:
            if "@" in w and w.split("@", 1)[1] == here:
                kind = w.split("@", 1)[0]
        speed = next((float(w[1:]) for w in words[1:] if w.startswith("x") and w[1:].replace(".", "", 1).isdigit()),
                     1.0)
        if kind.startswith("fault"):
            os._exit(139)
        if kind.startswith("hang"):
            time.sleep(600)
        if kind.startswith("refuse"):
            raise engine.EngineError(f"{name or image}: the kernel is not in this image", engine.E_INPUT)
        result = "PASS" if kind.startswith("pass") else "FAIL"
        doc = {"result": result, "line": f"Result: {result} (fake judge: {data.decode(errors='replace')})",
               "kernel": "fake", "image": name or str(image), "device": 0,
               "timing": {"median_ms": 0.001} if options.get("time") else None,
               "options": sorted(options), "open_options": self.open_options, "cache": options.get("cache"),
               "replay_lib": os.environ.get("KERNCAP_REPLAY_LIB")}
        if options.get("speedup"):
            doc["speedup"] = {"speedup": speed, "captured_median_ms": 0.010, "variant_median_ms": 0.010 / speed}
        if kind.startswith("lost"):
            doc["context_lost"] = True
            self.context_lost = True
        return doc

    def close(self):
        pass


def open_fake(path, **open_options):
    return FakeJudge(path, **open_options)
