"""Headless Chromium driven through the Chrome DevTools protocol over a pipe, for the tests of
pages: open a page, read what its scripts made of it, collect every console error, uncaught
exception and failed load, take a screenshot. No node and no websocket: `--remote-debugging-pipe`
has the browser read commands on its fd 3 and answer on its fd 4, one JSON message per
NUL-terminated line."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


class Browser:
    """One headless Chromium with one tab; `errors` gathers what its console said was wrong."""

    def __init__(self, *, width: int = 1280, height: int = 1600, timeout: float = 30) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="ampbench-chromium-")
        to_browser, self._commands = os.pipe()
        self._answers, from_browser = os.pipe()

        def fds() -> None:  # in the child: the pipe's ends at the fds the browser expects
            a, b = os.dup(to_browser), os.dup(from_browser)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=fds,
            close_fds=False,  # fds 3 and 4 must reach the browser; ours are not inheritable
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._id, self.events = b"", 0, []
        try:
            self._tab(width, height)
        except BaseException:
            self.close()
            raise

    def _tab(self, width: int, height: int) -> None:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=self.session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=self.session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    # --- the protocol -------------------------------------------------------------------------

    def _send(self, method: str, session: str | None, params: dict) -> int:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        return self._id

    def _next(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._answers], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def _until(self, done, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            message = self._next(deadline)
            if done(message):
                return message
            self.events.append(message)

    def call(self, method: str, session: str | None = None, **params: object) -> dict:
        sent = self._send(method, session, params)
        answer = self._until(lambda m: m.get("id") == sent)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    # --- what a test does -----------------------------------------------------------------------

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=self.session, url=url)
        self._until(lambda m: m.get("method") == "Page.loadEventFired")

    def eval(self, expression: str) -> object:
        result = self.call(
            "Runtime.evaluate",
            session=self.session,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 15) -> object:
        """The value of `expression` once it is truthy (polled), or its last value."""
        deadline = time.monotonic() + timeout
        value = self.eval(expression)
        while not value and time.monotonic() < deadline:
            time.sleep(0.2)
            value = self.eval(expression)
        return value

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", session=self.session, format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def errors(self) -> list[str]:
        """Every console error, uncaught exception and failed load seen so far."""
        while select.select([self._answers], [], [], 0.2)[0]:  # what is still on its way
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                break
            self._buffer += chunk
        while b"\0" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\0", 1)
            self.events.append(json.loads(raw))
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                what = details.get("exception", {}).get("description") or details.get("text")
                found.append(
                    f"uncaught: {what} at {details.get('url')}:{details.get('lineNumber')}"
                )
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console: " + " ".join(str(a.get("value")) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                found.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        return found

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._commands)
        os.close(self._answers)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
