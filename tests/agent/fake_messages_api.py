#!/usr/bin/env python3
"""fake_messages_api.py - a scripted Anthropic Messages API for agent tests.

The real Claude Code CLI, pointed at this server with ANTHROPIC_BASE_URL,
runs its real agent loop (tools executed for real in its working directory)
against a "model" that answers from a scenario file, so the tests see what
the CLI really prints on success, rate limits, overload and hangs without
any network.  Python 3 standard library only.

    fake_messages_api.py --port-file F --record-dir D --scenario S [--log L]

Listens on 127.0.0.1 on a free port and writes the port to F (atomically,
so a reader never sees half of it).  Every request is recorded in D as
NNNN-METHOD-PATH.json holding the request body (JSON when it parses, else
{"raw": text}); the headers go to NNNN-METHOD-PATH.headers.json.

Scenario: {"TASK-ID" or "*": [step, ...]}.  The task id is read from the
prompt ("You are implementing task T-1 ...", "Task-ID: T-1").  Steps:
  {"tool": "Write", "input": {"file_path": "REL", "content": "..."}}
  {"tool": "Edit"|"Bash"|..., "input": {...}}   a tool_use turn; a relative
      file_path is made absolute against "Primary working directory:"
  {"text": "done"}                 the final end_turn answer
  {"status": 429, "retry_after": 2, "times": N, "headers": {...}}
  {"status": 529}                  an error answer (overloaded_error)
  {"slow_seconds": N}              the next answer streams slowly: a ping
                                   every 0.5 s for N s
  {"slow_seconds": N, "deltas": true}
                                   the same with a text delta every 0.5 s
                                   (a text block before the answer's), which
                                   the CLI prints as stream events with
                                   --include-partial-messages
  {"hang": true}                   accepts the request and never answers
  {"hang": true, "times": N}       only the first N requests of the turn
                                   hang; later ones (a retried attempt) get
                                   the answer
Answer steps (tool, text) end a conversation turn; the turn of a request is
the number of tool results in it.  status/slow/hang steps before an answer
apply to that turn: a status step serves its first `times` requests of the
turn (every request when `times` is absent), then the answer is given.
Past the script the answer is {"text": "done"}.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Numbers that end up in the CLI's result event (usage, total_cost_usd),
# fixed so that tests can assert them.
INPUT_TOKENS = 1000
OUTPUT_TOKENS = 50
CACHE_READ_TOKENS = 200
CACHE_CREATE_TOKENS = 100

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error",
               413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}
ERROR_MESSAGES = {429: "Number of request tokens has exceeded your rate limit",
                  529: "Overloaded", 500: "Internal server error"}

TASK_PATTERNS = [re.compile(r"Task-ID:\s*([A-Za-z0-9][\w.-]*)"),
                 re.compile(r"implementing task\s+([A-Za-z0-9][\w.-]*)"),
                 re.compile(r"\b[Tt]ask\s+([A-Za-z][\w.-]*\d[\w.-]*)")]
CWD_PATTERN = re.compile(r"Primary working directory:\s*(\S+)")


def parse_turns(steps):
    """Groups a step list into turns: {"pre", "slow", "hang", "answer"}."""
    def fresh():
        return {"pre": [], "slow": 0, "deltas": False, "hang": False,
                "hang_times": None, "answer": None}
    turns, cur = [], fresh()
    for step in steps:
        if "status" in step:
            cur["pre"].append(step)
        elif "slow_seconds" in step:
            cur["slow"] = float(step["slow_seconds"])
            cur["deltas"] = bool(step.get("deltas"))
        elif step.get("hang"):
            cur["hang"] = True
            if "times" in step:
                cur["hang_times"] = int(step["times"])
        else:
            cur["answer"] = step
            turns.append(cur)
            cur = fresh()
    if cur["pre"] or cur["slow"] or cur["hang"]:
        turns.append(cur)
    return turns


def texts_of(content):
    """Every text in a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict):
            if isinstance(block.get("text"), str):
                out.append(block["text"])
            if block.get("type") == "tool_result":
                out.extend(texts_of(block.get("content")))
    return out


def user_texts(body):
    return [t for m in body.get("messages", []) if m.get("role") == "user"
            for t in texts_of(m.get("content"))]


def system_text(body):
    sys_field = body.get("system")
    return "\n".join(texts_of(sys_field)) if sys_field else ""


def task_id_of(body):
    texts = user_texts(body)
    for pat in TASK_PATTERNS:
        for t in texts:
            m = pat.search(t)
            if m:
                return m.group(1).rstrip(".")
    return None


def tool_results(body):
    n = 0
    for m in body.get("messages", []):
        if isinstance(m.get("content"), list):
            n += sum(1 for b in m["content"]
                     if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def all_texts(body):
    return [t for m in body.get("messages", [])
            for t in texts_of(m.get("content"))]


def working_dir(body):
    # 2.1.332 states it in a {"role": "system"} entry of "messages";
    # older versions put it in the top-level "system" text.
    for t in all_texts(body) + [system_text(body)]:
        m = CWD_PATTERN.search(t)
        if m:
            return m.group(1)
    return None


class Script:
    """The scenario and the per-(task, turn) request counts."""

    def __init__(self, path):
        self.turns = {}
        if path:
            with open(path) as f:
                doc = json.load(f)
            self.turns = {k: parse_turns(v) for k, v in doc.items()}
        self.seen = {}
        self.lock = threading.Lock()

    def plan(self, task, turn):
        """(turn plan, attempt number within the turn) for a request."""
        turns = self.turns.get(task) or self.turns.get("*") or []
        with self.lock:
            key = (task, turn)
            attempt = self.seen.get(key, 0)
            self.seen[key] = attempt + 1
        if turn < len(turns):
            return turns[turn], attempt
        return {"pre": [], "slow": 0, "deltas": False, "hang": False,
                "hang_times": None, "answer": {"text": "done"}}, attempt


def pick_status(plan, attempt):
    """The status step that answers this attempt, or None."""
    left = attempt
    for step in plan["pre"]:
        times = step.get("times")
        if times is None:
            return step
        if left < int(times):
            return step
        left -= int(times)
    return None


def answer_blocks(answer, cwd, turn):
    """(content blocks, stop_reason) of an answer step."""
    if "tool" in answer:
        inp = dict(answer.get("input", {}))
        fp = inp.get("file_path")
        if isinstance(fp, str) and not os.path.isabs(fp) and cwd:
            inp["file_path"] = os.path.join(cwd, fp)
        blocks = []
        if answer.get("text"):
            blocks.append({"type": "text", "text": answer["text"]})
        blocks.append({"type": "tool_use", "id": "toolu_%02d" % (turn + 1),
                       "name": answer["tool"], "input": inp})
        return blocks, "tool_use"
    return [{"type": "text", "text": answer.get("text", "done")}], "end_turn"


def usage(answer):
    u = {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
         "cache_read_input_tokens": CACHE_READ_TOKENS,
         "cache_creation_input_tokens": CACHE_CREATE_TOKENS}
    u.update(answer.get("usage", {}) if answer else {})
    return u


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-messages-api/1"

    def log_message(self, fmt, *args):
        self.server.log("%s %s" % (self.address_string(), fmt % args))

    # ---- plumbing ---------------------------------------------------
    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {"raw": raw.decode("utf-8", "replace")}

    def record(self, body):
        self.server.record(self.command, self.path, dict(self.headers), body)

    def send_json(self, status, doc, headers=None):
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_fake_%d" % int(time.time()))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def sse(self, event, data):
        chunk = ("event: %s\ndata: %s\n\n" % (event, json.dumps(data))).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.flush()

    # ---- endpoints --------------------------------------------------
    def do_GET(self):
        self.record(None)
        path = self.path.split("?")[0]
        if path.startswith("/v1/models"):
            self.send_json(200, {"data": [], "has_more": False,
                                 "first_id": None, "last_id": None})
        else:
            self.not_found()

    def do_HEAD(self):
        self.record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": INPUT_TOKENS})
        elif path == "/v1/messages":
            self.messages(body)
        else:
            self.not_found()

    def not_found(self):
        self.send_json(404, {"type": "error", "error": {
            "type": "not_found_error", "message": "no such endpoint"}})

    def messages(self, body):
        task = task_id_of(body)
        turn = tool_results(body)
        if not body.get("tools"):
            # Side requests of the CLI (titles, topic checks) are not
            # agent turns: a plain short answer keeps them out of the way.
            return self.answer(body, {"text": "ok"}, 0, 0)
        plan, attempt = self.server.script.plan(task, turn)
        self.server.log("task=%s turn=%d attempt=%d" % (task, turn, attempt))
        status = pick_status(plan, attempt)
        if status:
            return self.error(status)
        if plan["hang"] and (plan["hang_times"] is None or
                             attempt < plan["hang_times"]):
            self.server.stop.wait()
            return
        self.answer(body, plan["answer"] or {"text": "done"}, turn,
                    plan["slow"], plan["deltas"])

    def error(self, step):
        code = int(step["status"])
        headers = dict(step.get("headers", {}))
        if "retry_after" in step:
            headers["retry-after"] = step["retry_after"]
        etype = step.get("error_type", ERROR_TYPES.get(code, "api_error"))
        msg = step.get("message", ERROR_MESSAGES.get(code, "error"))
        self.send_json(code, {"type": "error",
                              "error": {"type": etype, "message": msg}},
                       headers)

    def answer(self, body, answer, turn, slow, deltas=False):
        blocks, stop = answer_blocks(answer, working_dir(body), turn)
        msg = {"id": "msg_fake_%02d" % (turn + 1), "type": "message",
               "role": "assistant", "model": body.get("model", "claude"),
               "content": blocks, "stop_reason": stop, "stop_sequence": None,
               "usage": usage(answer)}
        if body.get("stream"):
            self.stream(msg, slow, deltas)
        else:
            self.send_json(200, msg)

    def stream(self, msg, slow, deltas=False):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        start = dict(msg, content=[], stop_reason=None,
                     usage=dict(msg["usage"], output_tokens=1))
        self.sse("message_start", {"type": "message_start", "message": start})
        first = 0
        if deltas and slow:
            self.trickle_text(slow)
            first = 1
        else:
            self.trickle(slow)
        for i, block in enumerate(msg["content"]):
            self.stream_block(first + i, block)
        self.sse("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"],
                      "stop_sequence": None},
            "usage": {"output_tokens": msg["usage"]["output_tokens"]}})
        self.sse("message_stop", {"type": "message_stop"})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def trickle(self, slow):
        """Keeps the stream alive for `slow` seconds, a ping each 0.5 s."""
        end = time.monotonic() + slow
        while time.monotonic() < end and not self.server.stop.is_set():
            self.sse("ping", {"type": "ping"})
            time.sleep(0.5)

    def trickle_text(self, slow):
        """A text block of its own growing by a delta each 0.5 s for `slow`
        seconds: the model "thinking aloud" before its answer."""
        self.sse("content_block_start", {
            "type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}})
        end = time.monotonic() + slow
        while time.monotonic() < end and not self.server.stop.is_set():
            self.sse("content_block_delta", {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "."}})
            time.sleep(0.5)
        self.sse("content_block_stop", {"type": "content_block_stop",
                                        "index": 0})

    def stream_block(self, i, block):
        if block["type"] == "text":
            self.sse("content_block_start", {
                "type": "content_block_start", "index": i,
                "content_block": {"type": "text", "text": ""}})
            self.sse("content_block_delta", {
                "type": "content_block_delta", "index": i,
                "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            self.sse("content_block_start", {
                "type": "content_block_start", "index": i,
                "content_block": dict(block, input={})})
            self.sse("content_block_delta", {
                "type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta",
                          "partial_json": json.dumps(block["input"])}})
        self.sse("content_block_stop", {"type": "content_block_stop",
                                        "index": i})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = Script(args.scenario)
        self.record_dir = args.record_dir
        self.logf = open(args.log, "a") if args.log else sys.stderr
        self.count = 0
        self.count_lock = threading.Lock()
        self.stop = threading.Event()
        if self.record_dir:
            os.makedirs(self.record_dir, exist_ok=True)

    def log(self, line):
        self.logf.write("%.3f %s\n" % (time.time(), line))
        self.logf.flush()

    def record(self, method, path, headers, body):
        with self.count_lock:
            self.count += 1
            n = self.count
        self.log("request %d: %s %s" % (n, method, path))
        if not self.record_dir:
            return
        name = re.sub(r"[^A-Za-z0-9]+", "_", path.split("?")[0]).strip("_")
        base = os.path.join(self.record_dir, "%04d-%s-%s" % (n, method, name))
        with open(base + ".json", "w") as f:
            json.dump(body, f, indent=1)
        with open(base + ".headers.json", "w") as f:
            json.dump({"path": path, "headers": headers}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--record-dir")
    ap.add_argument("--scenario")
    ap.add_argument("--log")
    args = ap.parse_args()
    srv = Server(args)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.replace(tmp, args.port_file)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop.set()


if __name__ == "__main__":
    main()
