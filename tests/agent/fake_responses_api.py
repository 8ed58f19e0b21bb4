#!/usr/bin/env python3
"""fake_responses_api.py - a scripted OpenAI Responses API for Codex tests.

The real Codex CLI, pointed at this server by a model provider in
$CODEX_HOME/config.toml (base_url http://127.0.0.1:PORT/v1, wire_api
"responses", supports_websockets false), runs its real agent loop: its
tools run for real in its working directory, against a "model" that
answers from a scenario file.  Python 3 standard library only.

    fake_responses_api.py --port-file F --record-dir D --scenario S [--log L]

Listens on 127.0.0.1 on a free port and writes the port to F (atomically).
Every request is recorded in D as NNNN-POST-responses.json.

Scenario: {"TASK-ID" or "*": [step, ...]}; the task id is read from the
prompt ("Task-ID: T-1", "You are implementing task T-1 ...").  Steps:
  {"shell": "echo hi > f"}   a tool turn: Codex's `exec` tool (JavaScript)
                             calling its exec_command with that command
  {"text": "done"}           the final answer
  {"status": 401|429|500, "times": N}
                             an error answer for the turn's first N requests
                             (every request when times is absent)
  {"hang": true, "times": N} accepts the request and never answers
A turn is the number of tool outputs in the request.  Past the script the
answer is {"text": "done"}.  Usage is fixed: 1000 input tokens of which 200
cached, 50 output, for every request.
"""
import argparse
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INPUT_TOKENS, CACHED_TOKENS, OUTPUT_TOKENS = 1000, 200, 50
TASKS = [re.compile(r"Task-ID:\s*([A-Za-z0-9][\w.-]*)"),
         re.compile(r"implementing task\s+([A-Za-z0-9][\w.-]*)")]
MESSAGES = {401: "Incorrect API key provided", 429: "Rate limit reached",
            500: "The server had an error"}


def texts(body):
    out = []
    for item in body.get("input", []):
        if isinstance(item, dict):
            for c in item.get("content") or []:
                if isinstance(c, dict) and isinstance(c.get("text"), str):
                    out.append(c["text"])
    return out


def task_of(body):
    for pat in TASKS:
        for t in texts(body):
            m = pat.search(t)
            if m:
                return m.group(1)
    return "*"


def turn_of(body):
    return sum(1 for i in body.get("input", []) if isinstance(i, dict) and
               i.get("type") in ("custom_tool_call_output", "function_call_output"))


class Script:
    def __init__(self, path):
        with open(path) as f:
            self.steps = json.load(f)
        self.seen = {}
        self.lock = threading.Lock()

    def plan(self, task, turn):
        """The turn's error/hang steps and its answer."""
        steps = self.steps.get(task, self.steps.get("*", []))
        pre, answers = [], []
        for s in steps:
            if "shell" in s or "text" in s:
                answers.append((pre, s))
                pre = []
            else:
                pre.append(s)
        if turn < len(answers):
            return answers[turn]
        return (pre if turn == len(answers) else []), {"text": "done"}

    def count(self, task, turn):
        with self.lock:
            k = (task, turn)
            self.seen[k] = self.seen.get(k, 0) + 1
            return self.seen[k]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        self.server.log(fmt % args)

    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        self.server.record(body)
        task, turn = task_of(body), turn_of(body)
        pre, answer = self.server.script.plan(task, turn)
        nth = self.server.script.count(task, turn)
        left = nth
        for step in pre:
            times = step.get("times")
            if times is not None and left > times:
                left -= times
                continue
            if step.get("hang"):
                self.server.log("hang %s turn %d" % (task, turn))
                time.sleep(3600)
                return
            return self.error(step["status"])
        self.stream(answer, turn)

    def error(self, status):
        doc = {"error": {"message": MESSAGES.get(status, "error %d" % status),
                         "type": "invalid_request_error" if status < 500
                         else "server_error", "code": None}}
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, answer, turn):
        rid = "resp_%d_%d" % (turn, time.monotonic_ns())
        evs = [{"type": "response.created", "response": {"id": rid}}]
        if "shell" in answer:
            code = "const r = await tools.exec_command({cmd: %s}); text(JSON.stringify(r));" % \
                json.dumps(answer["shell"])
            item = {"type": "custom_tool_call", "id": "ctc_%d" % turn,
                    "call_id": "call_%d" % turn, "name": "exec",
                    "status": "completed", "input": code}
            evs.append({"type": "response.output_item.added", "item": item})
        else:
            item = {"type": "message", "id": "msg_%d" % turn, "role": "assistant",
                    "content": [{"type": "output_text", "text": answer["text"]}]}
            evs.append({"type": "response.output_item.added",
                        "item": dict(item, content=[])})
            evs.append({"type": "response.output_text.delta",
                        "item_id": item["id"], "delta": answer["text"]})
        evs.append({"type": "response.output_item.done", "item": item})
        evs.append({"type": "response.completed", "response": {"id": rid, "usage": {
            "input_tokens": INPUT_TOKENS,
            "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
            "output_tokens": OUTPUT_TOKENS,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}}})
        data = "".join("event: %s\ndata: %s\n\n" % (e["type"], json.dumps(e))
                       for e in evs).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = Script(args.scenario)
        self.dir = args.record_dir
        os.makedirs(self.dir, exist_ok=True)
        self.n = 0
        self.lock = threading.Lock()
        self.logf = open(args.log, "a") if args.log else None

    def log(self, line):
        if self.logf:
            self.logf.write(line + "\n")
            self.logf.flush()

    def record(self, body):
        with self.lock:
            self.n += 1
            n = self.n
        with open(os.path.join(self.dir, "%04d-POST-responses.json" % n), "w") as f:
            json.dump(body, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--record-dir", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--log")
    args = ap.parse_args()
    srv = Server(args)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
