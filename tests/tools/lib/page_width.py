"""Sideways overflow of a page in headless Chromium, at a given window width
(tests/tools/status_page.sh).

    page_width.py CHROMIUM URL WIDTH HEIGHT [PNG]

Loads URL in a window of WIDTH x HEIGHT and prints one line: `WIDTH: none`, or
`WIDTH:` and every table wider than its box, and the page if it is wider than the
window. Exit 1 when anything overflows. PNG: a screenshot of the whole page at that
width too.

Chromium is driven over --remote-debugging-pipe (its DevTools protocol on file
descriptors 3 and 4): the measuring script is evaluated by DevTools, so the page is
measured as served, under its own Content-Security-Policy that runs no script, and at
any width (a `--dump-dom` window is never narrower than 500 px). Standard library only.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import time

MEASURE = """(() => {
  const doc = document.documentElement, bad = [];
  if (doc.scrollWidth > doc.clientWidth)
    bad.push(`the page is ${doc.scrollWidth} px wide in ${doc.clientWidth}`);
  document.querySelectorAll('table').forEach((t) => {
    const box = t.parentElement, row = t.querySelector('tbody tr');
    const what = t.className || (row && row.className) || 'table';
    const where = t.closest('section')?.querySelector('h2 a')?.textContent || '?';
    if (box.scrollWidth > box.clientWidth || t.getBoundingClientRect().right > doc.clientWidth)
      bad.push(`${what} table of ${where}: ${box.scrollWidth} px in a ${box.clientWidth} px box`);
  });
  return {width: innerWidth, height: doc.scrollHeight, bad};
})()"""


class Pipe:
    """The DevTools protocol over two pipes: JSON messages ended by a NUL byte."""

    def __init__(self, chromium: str, profile: str):
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()

        def fds() -> None:
            # Copies first: a pipe may already be fd 3 or 4, and dup2 onto itself would
            # leave it close-on-exec.
            read, write = os.dup(to_child), os.dup(from_child)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            preexec_fn=fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    def _read(self) -> dict:
        while b"\0" not in self._buf:
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, method: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            if any(e.get("method") == method for e in self.events):
                return
            self.events.append(self._read())
        raise RuntimeError(f"no {method} before the deadline")

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main() -> int:
    chromium, url, width, height = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    png = sys.argv[5] if len(sys.argv) > 5 else None
    with tempfile.TemporaryDirectory() as profile:
        cdp = Pipe(chromium, profile)
        try:
            target = cdp.call("Target.createTarget", url="about:blank")["targetId"]
            session = cdp.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            cdp.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                     deviceScaleFactor=1, mobile=False)
            cdp.call("Page.enable", session)
            cdp.events.clear()  # about:blank's load is not the page's
            cdp.call("Page.navigate", session, url=url)
            cdp.wait_event("Page.loadEventFired", time.monotonic() + 30)
            result = cdp.call("Runtime.evaluate", session, expression=MEASURE,
                              returnByValue=True)["result"]["value"]
            if png:
                shot = cdp.call("Page.captureScreenshot", session, format="png",
                                captureBeyondViewport=True,
                                clip={"x": 0, "y": 0, "width": width,
                                      "height": result["height"], "scale": 1})
                with open(png, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
        finally:
            cdp.close()
    if result["width"] != width:
        print(f"{width}: the window is {result['width']} px wide, not {width}")
        return 1
    print(f"{width}: " + ("; ".join(result["bad"]) or "none"))
    return 1 if result["bad"] else 0


if __name__ == "__main__":
    sys.exit(main())
