"""A GitHub Actions runner, emulated closely enough to run this repository's action.yml and
the workflows that use it here, for real, with no GitHub: tests/packaging/test_action.py and the
GitHubActions class of tests/packaging/test_examples.py share it.

What is emulated, as GitHub's runner does it:

- Expressions: `${{ ... }}` in `run:`, `env:`, `with:`, `if:`, input defaults and action
  outputs; the contexts github, runner, env, inputs, steps, secrets, vars, job; literals,
  `!`, `==`/`!=` (strings compared case-insensitively, otherwise as numbers: `'true' == true`
  is false, as on GitHub), `<` `<=` `>` `>=`, `&&`/`||` returning an operand, property and
  index access (names may hold `-`), the functions hashFiles (below), success, always,
  failure, cancelled, contains, startsWith, endsWith, format, join, toJSON, fromJSON. An
  `if:` without a status function is `success() && (...)`.
- `run:` steps: the script, expressions substituted, written to a file under RUNNER_TEMP and
  run by its shell: `bash` is `bash --noprofile --norc -eo pipefail {0}`, `sh` is `sh -e {0}`,
  no shell at all `bash -e {0}` (a workflow's `defaults: run: shell:` applies), a custom one
  with its `{0}`; working directory GITHUB_WORKSPACE. Each step gets fresh GITHUB_OUTPUT,
  GITHUB_ENV, GITHUB_PATH, GITHUB_STATE and GITHUB_STEP_SUMMARY files, read after it as the
  runner reads them (`name=value` and `name<<DELIMITER` lines): outputs go to
  `steps.ID.outputs`, variables to the environment of later steps, and each GITHUB_PATH line
  is put in front of PATH for later steps (the last one first).
- Composite actions (`runs: using: composite`): inputs from `with:` (an input the action does
  not declare fails the test, where GitHub warns) or their default; `inputs`, `steps` of their
  own; `github.action_path` and GITHUB_ACTION_PATH; `github.action_ref`/`action_repository`
  from the `uses:` reference, but empty in `run:` text, as GitHub's runner has them there
  (actions/runner#2473: only `env:`, `with:` and `if:` see them); outputs from `outputs.X.value`.
  A step that fails fails the action and the job; later steps then run only with `always()`
  or `failure()`.
- hashFiles(patterns...): files under GITHUB_WORKSPACE matching any pattern (`*`, `?`, `[..]`
  within a name, `**` any number of directories, `!` excludes), sorted; the SHA-256 of their
  SHA-256 digests in turn, or '' when none matches, as the runner's hashFiles computes it.
- actions/cache (restore, then save in the post step when the job succeeded and the key was not
  hit), actions/cache/restore@v4 and actions/cache/save@v4, over a CacheStore, a directory that
  outlives the job: restore takes the entry of exactly `key`, else, for each of `restore-keys`
  in turn, the newest entry whose key starts with it; outputs `cache-hit` ('true' or 'false';
  unset on a miss), `cache-primary-key`, `cache-matched-key`. Save keeps the first entry saved
  under a key (a second save of a key is a warning, not a failure; so is a path that is not
  there), as actions/cache does. `~` in `path` is HOME.
- Other `uses:` are the test's: a dict of handlers by action name (`owner/repo[/path]` without
  its `@ref`), and actions of this repository by name (`precompress/precompress`: the
  directory holding action.yml).

Not emulated: containers (a job's `container:` is ignored: steps run on this machine), services,
matrices, `continue-on-error`, timeouts, masking, workflow commands on stdout (`::error::`
lines are kept in the output for the test to read).
"""
import sys

sys.dont_write_bytecode = True
import contextlib
import fnmatch
import functools
import hashlib
import http.server
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import threading
import time

from pctest import SRC_ROOT, project_version, sha256


# ----------------------------------------------------------------------------
# Expressions
# ----------------------------------------------------------------------------

class ExprError(Exception):
    pass


TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^']|'')*')
  | (?P<num>-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))
  | (?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\].,*])
  | (?P<id>[A-Za-z_][A-Za-z0-9_-]*)
""", re.X)


def tokenize(text):
    pos, out = 0, []
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            raise ExprError("cannot read %r at %r" % (text, text[pos:]))
        pos = m.end()
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group(kind)))
    return out


def to_number(v):
    if v is None:
        return 0
    if isinstance(v, bool):
        return 1 if v else 0
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        s = v.strip()
        if s == "":
            return 0
        try:
            return int(s, 16) if s.lower().startswith("0x") else float(s)
        except ValueError:
            return math.nan
    return math.nan


def to_string(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v == int(v) else repr(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, indent=2)
    return str(v)


def truthy(v):
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0 and not math.isnan(v)
    if isinstance(v, str):
        return v != ""
    return True


def loose_equal(a, b):
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        if a is None or b is None or isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
            return a is None and b is None
        a, b = to_number(a), to_number(b)
    if isinstance(a, str):
        return a.lower() == b.lower()
    if isinstance(a, (dict, list)):
        return a is b
    return a == b


def compare(a, b, op):
    if not (isinstance(a, str) and isinstance(b, str)):
        a, b = to_number(a), to_number(b)
        if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
            return False
    else:
        a, b = a.lower(), b.lower()
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


class Parser:
    """Recursive descent over the tokens; evaluates as it goes (with short circuits)."""

    def __init__(self, text, ctx):
        self.text, self.toks, self.i, self.ctx = text, tokenize(text), 0, ctx
        self.used_status = False

    def peek(self, value=None):
        if self.i >= len(self.toks):
            return None
        t = self.toks[self.i]
        return t if value is None or t[1] == value else None

    def take(self, value=None):
        t = self.peek(value)
        if t is None:
            raise ExprError("%r: expected %s at token %d" % (self.text, value or "more", self.i))
        self.i += 1
        return t

    def parse(self):
        v = self.or_()
        if self.i != len(self.toks):
            raise ExprError("%r: unexpected %r" % (self.text, self.toks[self.i][1]))
        return v

    def or_(self):
        v = self.and_()
        while self.peek("||"):
            self.take()
            w = self.and_()
            v = v if truthy(v) else w
        return v

    def and_(self):
        v = self.eq()
        while self.peek("&&"):
            self.take()
            w = self.eq()
            v = w if truthy(v) else v
        return v

    def eq(self):
        v = self.cmp()
        while self.peek("==") or self.peek("!="):
            op = self.take()[1]
            w = self.cmp()
            v = loose_equal(v, w) if op == "==" else not loose_equal(v, w)
        return v

    def cmp(self):
        v = self.unary()
        while any(self.peek(o) for o in ("<", "<=", ">", ">=")):
            op = self.take()[1]
            v = compare(v, self.unary(), op)
        return v

    def unary(self):
        if self.peek("!"):
            self.take()
            return not truthy(self.unary())
        return self.postfix(self.primary())

    def primary(self):
        kind, val = self.take()
        if kind == "str":
            return val[1:-1].replace("''", "'")
        if kind == "num":
            return to_number(val)
        if val == "(":
            v = self.or_()
            self.take(")")
            return v
        if kind != "id":
            raise ExprError("%r: unexpected %r" % (self.text, val))
        if val in ("true", "false"):
            return val == "true"
        if val == "null":
            return None
        if self.peek("("):
            self.take()
            args = []
            while not self.peek(")"):
                args.append(self.or_())
                if not self.peek(")"):
                    self.take(",")
            self.take(")")
            return self.call(val, args)
        if val not in self.ctx:
            raise ExprError("%r: unknown context %r" % (self.text, val))
        return self.ctx[val]

    def postfix(self, v):
        while True:
            if self.peek("."):
                self.take()
                kind, name = self.take()
                if kind != "id":
                    raise ExprError("%r: bad property %r" % (self.text, name))
                v = index(v, name)
            elif self.peek("["):
                self.take()
                k = self.or_()
                self.take("]")
                v = index(v, k)
            else:
                return v

    def call(self, name, args):
        f = name.lower()
        if f in ("success", "always", "failure", "cancelled"):
            self.used_status = True
            status = self.ctx["__status"]
            return {"success": status == "success", "always": True, "failure": status == "failure",
                    "cancelled": False}[f]
        if f == "hashfiles":
            return self.ctx["__hashfiles"](*[to_string(a) for a in args])
        if f == "contains":
            hay, needle = args
            if isinstance(hay, list):
                return any(loose_equal(x, needle) for x in hay)
            return to_string(needle).lower() in to_string(hay).lower()
        if f == "startswith":
            return to_string(args[0]).lower().startswith(to_string(args[1]).lower())
        if f == "endswith":
            return to_string(args[0]).lower().endswith(to_string(args[1]).lower())
        if f == "format":
            fmt = to_string(args[0])
            return re.sub(r"\{(\d+)\}", lambda m: to_string(args[1 + int(m.group(1))]),
                          fmt.replace("{{", "\0").replace("}}", "\1")).replace("\0", "{").replace("\1", "}")
        if f == "join":
            sep = to_string(args[1]) if len(args) > 1 else ","
            return sep.join(to_string(x) for x in args[0]) if isinstance(args[0], list) else to_string(args[0])
        if f == "tojson":
            return json.dumps(args[0], indent=2)
        if f == "fromjson":
            return json.loads(to_string(args[0]))
        raise ExprError("%r: unknown function %s()" % (self.text, name))


def index(v, k):
    if isinstance(v, dict):
        if isinstance(k, str):
            for key in v:  # property names are case-insensitive
                if key.lower() == k.lower():
                    return v[key]
        return None
    if isinstance(v, list) and not isinstance(k, str):
        k = int(to_number(k))
        return v[k] if 0 <= k < len(v) else None
    return None


def evaluate(text, ctx):
    return Parser(text, ctx).parse()


EXPR_RE = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def interpolate(value, ctx):
    """A `with:`/`env:`/`run:` value with each ${{ }} replaced by its value as a string. A value
    that is one expression alone keeps its type (as an `if:` does)."""
    if not isinstance(value, str):
        return value
    m = EXPR_RE.fullmatch(value.strip())
    if m and value.strip() == value:
        return evaluate(m.group(1), ctx)
    return EXPR_RE.sub(lambda m: to_string(evaluate(m.group(1), ctx)), value)


def as_input(value):
    """A `with:` value as the action sees it: a string (YAML's true is 'true')."""
    return to_string(value)


def condition(text, ctx):
    if text is None:
        text = "success()"
    if isinstance(text, bool):
        text = "true" if text else "false"
    text = str(text).strip()
    m = EXPR_RE.fullmatch(text)
    if m:
        text = m.group(1)
    p = Parser(text, ctx)
    v = p.parse()
    if not p.used_status:
        return ctx["__status"] == "success" and truthy(v)
    return truthy(v)


# ----------------------------------------------------------------------------
# hashFiles
# ----------------------------------------------------------------------------

def glob_match(pattern, rel):
    """rel (a path below the workspace, '/'-separated) matched by pattern, as @actions/glob:
    segments match with fnmatch, '**' spans any number of them; a pattern matches everything
    below what it names."""
    pat = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    parts = rel.split("/")

    @functools.lru_cache(maxsize=None)
    def m(i, j):
        if i == len(pat):
            return True  # the rest lies below a match: implicit descendants
        if pat[i] == "**":
            return any(m(i + 1, k) for k in range(j, len(parts) + 1))
        if j == len(parts):
            return False
        return fnmatch.fnmatchcase(parts[j], pat[i]) and m(i + 1, j + 1)

    return m(0, 0)


def hash_files(workspace, *patterns):
    pats = []
    for p in patterns:
        pats += [l.strip() for l in p.splitlines() if l.strip()]
    files = []
    for dirpath, dirnames, filenames in os.walk(workspace, followlinks=True):
        dirnames.sort()
        for n in sorted(filenames):
            full = os.path.join(dirpath, n)
            if not os.path.isfile(full):
                continue
            rel = os.path.relpath(full, workspace).replace(os.sep, "/")
            keep = False
            for p in pats:
                if p.startswith("!"):
                    if glob_match(p[1:], rel):
                        keep = False
                elif glob_match(p, rel):
                    keep = True
            if keep:
                files.append(full)
    if not files:
        return ""
    total = hashlib.sha256()
    for f in sorted(files):
        h = hashlib.sha256()
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        total.update(h.digest())
    return total.hexdigest()


# ----------------------------------------------------------------------------
# actions/cache
# ----------------------------------------------------------------------------

class CacheStore:
    """The repository's cache on GitHub's side: entries by key, each a copy of the saved path,
    newest last. Outlives the jobs that use it."""

    def __init__(self, root):
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.index_path = os.path.join(root, "index.json")

    def entries(self):
        if not os.path.exists(self.index_path):
            return []
        with open(self.index_path) as f:
            return json.load(f)

    def keys(self):
        return [e["key"] for e in self.entries()]

    def find(self, key, restore_keys):
        entries = self.entries()
        for e in entries:
            if e["key"] == key:
                return e
        for prefix in restore_keys:
            for e in reversed(entries):
                if e["key"].startswith(prefix):
                    return e
        return None

    def restore(self, e, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copytree(os.path.join(self.root, e["dir"]), path, symlinks=True, dirs_exist_ok=True)

    def save(self, key, path):
        """False (a warning on GitHub) when the key is taken or there is nothing at path."""
        entries = self.entries()
        if any(e["key"] == key for e in entries) or not os.path.exists(path):
            return False
        d = "entry%d" % len(entries)
        shutil.copytree(path, os.path.join(self.root, d), symlinks=True)
        entries.append({"key": key, "dir": d, "saved": time.time()})
        with open(self.index_path, "w") as f:
            json.dump(entries, f)
        return True


def cache_inputs(w, home):
    for k in w:
        if k not in ("path", "key", "restore-keys", "enableCrossOsArchive", "fail-on-cache-miss",
                     "lookup-only", "upload-chunk-size", "save-always"):
            raise AssertionError("actions/cache has no input %r" % k)
    paths = [p.strip() for p in w.get("path", "").splitlines() if p.strip()]
    if len(paths) != 1:
        raise AssertionError("this emulation keeps one cache path, not %r" % paths)
    path = paths[0]
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    key = w.get("key", "")
    if not key or "," in key or len(key) > 512:
        raise AssertionError("actions/cache: bad key %r" % key)
    restore_keys = [k.strip() for k in w.get("restore-keys", "").splitlines() if k.strip()]
    return path, key, restore_keys


# ----------------------------------------------------------------------------
# The runner
# ----------------------------------------------------------------------------

class StepResult:
    def __init__(self, name, id_, where):
        self.name, self.id, self.where = name, id_, where
        self.conclusion = "skipped"
        self.rc = None
        self.stdout = self.stderr = ""
        self.outputs = {}
        self.script = None

    @property
    def output(self):
        return self.stdout + self.stderr

    def __repr__(self):
        return "<step %s%r %s rc=%s\n--- stdout\n%s--- stderr\n%s>" % (
            self.where + ": " if self.where else "", self.name, self.conclusion, self.rc,
            self.stdout[-3000:], self.stderr[-3000:])


def read_file_command(path):
    """name=value and name<<DELIMITER lines (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STATE)."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.strip() == "":
            continue
        if "=" in line and ("<<" not in line or line.index("=") < line.index("<<")):
            k, v = line.split("=", 1)
            out[k] = v
            continue
        k, delim = line.split("<<", 1)
        vals = []
        while i < len(lines) and lines[i] != delim:
            vals.append(lines[i])
            i += 1
        if i >= len(lines):
            raise AssertionError("%s: no end %r for %r" % (path, delim, k))
        i += 1
        out[k] = "\n".join(vals)
    return out


class Job:
    """One job on one emulated runner. top: a fresh directory for its workspace, HOME and
    RUNNER_TEMP. env: the runner's environment (PATH, ...). github/runner: context values
    added to or replacing the defaults. actions: {"owner/repo": directory of its action.yml};
    handlers: {"owner/repo[/path]": f(job, with, env, step_result) -> outputs}; run_hook: f(job,
    step, script) -> None to run a `run:` step, or anything else to leave it to the test
    (recorded as success)."""

    def __init__(self, top, env, store=None, github=None, runner=None, actions=None, handlers=None,
                 run_hook=None, defaults=None):
        self.top = top
        self.workspace, self.home, self.temp = (os.path.join(top, d) for d in ("work", "home", "runner-temp"))
        self.tool_cache = os.path.join(top, "tool-cache")
        for d in (self.workspace, self.home, self.temp, self.tool_cache):
            os.makedirs(d, exist_ok=True)
        self.base_env = dict(env)
        self.runner = {"os": "Linux", "arch": "X64", "name": "emulated", "temp": self.temp,
                       "tool_cache": self.tool_cache, "environment": "github-hosted", "debug": ""}
        self.runner.update(runner or {})
        self.github = {"workspace": self.workspace, "server_url": "https://github.com",
                       "api_url": "https://api.github.com", "repository": "example/site",
                       "repository_owner": "example", "ref": "refs/heads/main", "ref_name": "main",
                       "ref_type": "branch", "sha": "0" * 40, "event_name": "push", "event": {},
                       "token": "", "job": "job", "run_id": "1", "run_number": "1", "run_attempt": "1",
                       "workflow": "emulated", "actor": "someone", "action_path": "", "action_ref": "",
                       "action_repository": "", "action": ""}
        self.github.update(github or {})
        self.store = store
        self.actions = dict(actions or {})
        self.handlers = {"actions/cache": Job.cache_both, "actions/cache/restore": Job.cache_restore,
                         "actions/cache/save": Job.cache_save}
        self.handlers.update(handlers or {})
        self.run_hook = run_hook
        self.defaults = defaults or {}
        self.env_added = {}
        self.path_added = []  # newest first
        self.status = "success"
        self.results = []
        self.posts = []
        self.n = 0

    # --- environment -------------------------------------------------------

    def process_env(self, extra):
        e = dict(self.base_env)
        e.update({"HOME": self.home, "GITHUB_WORKSPACE": self.workspace, "RUNNER_TEMP": self.temp,
                  "RUNNER_OS": self.runner["os"], "RUNNER_ARCH": self.runner["arch"],
                  "RUNNER_NAME": self.runner["name"], "RUNNER_TOOL_CACHE": self.tool_cache,
                  "RUNNER_ENVIRONMENT": self.runner["environment"],
                  "CI": "true", "GITHUB_ACTIONS": "true"})
        for k in ("server_url", "api_url", "repository", "repository_owner", "ref", "ref_name",
                  "ref_type", "sha", "event_name", "job", "run_id", "run_number", "run_attempt",
                  "workflow", "actor"):
            e["GITHUB_" + k.upper()] = to_string(self.github[k])
        e.update(self.env_added)
        e.update(extra)
        if self.path_added:
            e["PATH"] = os.pathsep.join(self.path_added + [e.get("PATH", "/usr/bin:/bin")])
        return e

    def context(self, env, steps, inputs=None, github=None, status=None):
        g = dict(self.github)
        g.update(github or {})
        ctx = {"github": g, "runner": dict(self.runner), "env": dict(env), "steps": steps,
               "secrets": {"GITHUB_TOKEN": self.github["token"]}, "vars": {},
               "job": {"status": self.status}, "matrix": {}, "strategy": {}, "needs": {},
               "__status": status or self.status,
               "__hashfiles": lambda *p: hash_files(self.workspace, *p)}
        if inputs is not None:
            ctx["inputs"] = inputs
        return ctx

    # --- steps --------------------------------------------------------------

    def run(self, steps, env=None):
        """Runs a job's steps, then its post steps (last first); returns self."""
        ctx_env = {k: as_input(v) for k, v in (env or {}).items()}
        steps_ctx = {}
        for step in steps:
            self.step(step, ctx_env, steps_ctx, where="")
        for post in reversed(self.posts):
            post()
        return self

    def step(self, step, env, steps_ctx, where, inputs=None, github=None):
        self.n += 1
        name = step.get("name") or step.get("uses") or (step.get("run") or "").split("\n")[0]
        res = StepResult(name, step.get("id") or "__step%d" % self.n, where)
        self.results.append(res)
        ctx = self.context(env, steps_ctx, inputs, github)
        if not condition(step.get("if"), ctx):
            steps_ctx[res.id] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            return res
        # A step's env sees the contexts; its values become strings.
        step_env = dict(env)
        for k, v in (step.get("env") or {}).items():
            step_env[k] = as_input(interpolate(v, ctx))
        ctx = self.context(step_env, steps_ctx, inputs, github)
        if "uses" in step:
            w = {k: as_input(interpolate(v, ctx)) for k, v in (step.get("with") or {}).items()}
            ok = self.uses(step["uses"], w, step_env, res)
        else:
            ok = self.run_script(step, step_env, ctx, res, inputs is not None, github)
        res.conclusion = "success" if ok else "failure"
        if not ok:
            self.status = "failure"
        steps_ctx[res.id] = {"outputs": res.outputs, "outcome": res.conclusion, "conclusion": res.conclusion}
        return res

    def run_script(self, step, step_env, ctx, res, in_action, github):
        if in_action:
            # actions/runner#2473: in a composite action's run: text these two are empty.
            ctx = dict(ctx, github=dict(ctx["github"], action_ref="", action_repository=""))
        script = res.script = to_string(interpolate(step["run"], ctx))
        if self.run_hook is not None and not in_action:
            if self.run_hook(self, step, script) is not None:
                res.rc = 0
                return True
        shell = step.get("shell")
        if shell is None and not in_action:
            shell = (self.defaults.get("run") or {}).get("shell")
        if in_action and shell is None:
            raise AssertionError("a composite action's run: step needs shell: %r" % res.name)
        argv = {None: ["bash", "-e", "{0}"], "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
                "sh": ["sh", "-e", "{0}"], "python": ["python3", "{0}"]}.get(shell)
        if argv is None:
            argv = shlex.split(shell)
            if "{0}" not in argv:
                raise AssertionError("custom shell without {0}: %r" % shell)
        files = {}
        for k in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"):
            files[k] = os.path.join(self.temp, "_runner_file_commands", "%s_%d" % (k.lower(), self.n))
            os.makedirs(os.path.dirname(files[k]), exist_ok=True)
            open(files[k], "w").close()
        path = os.path.join(self.temp, "step-%d.sh" % self.n)
        with open(path, "w") as f:
            f.write(script)
        extra = dict(step_env)
        extra.update(files)
        if github and github.get("action_path"):
            extra["GITHUB_ACTION_PATH"] = github["action_path"]
        cwd = os.path.join(self.workspace, step.get("working-directory", "") or "")
        p = subprocess.run([path if a == "{0}" else a for a in argv], cwd=cwd, env=self.process_env(extra),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        res.rc = p.returncode
        res.stdout = p.stdout.decode("utf-8", "replace")
        res.stderr = p.stderr.decode("utf-8", "replace")
        res.outputs = read_file_command(files["GITHUB_OUTPUT"])
        self.env_added.update(read_file_command(files["GITHUB_ENV"]))
        with open(files["GITHUB_PATH"]) as f:
            for line in f.read().split("\n"):
                if line.strip():
                    self.path_added.insert(0, line.strip())
        return p.returncode == 0

    def uses(self, ref, w, env, res):
        name, _, version = ref.partition("@")
        if name.startswith("./"):
            return self.composite(os.path.join(self.workspace, name), w, env, res, "", "")
        if name in self.actions:
            return self.composite(self.actions[name], w, env, res, version, name)
        if name in self.handlers:
            out = self.handlers[name](self, w, env, res)
            res.outputs = out or {}
            return True
        raise AssertionError("no emulation of action %r" % ref)

    def composite(self, path, w, env, res, ref, repository):
        import yaml
        for fn in ("action.yml", "action.yaml"):
            if os.path.exists(os.path.join(path, fn)):
                with open(os.path.join(path, fn)) as f:
                    action = yaml.safe_load(f)
                break
        else:
            raise AssertionError("no action.yml in %s" % path)
        if action["runs"]["using"] != "composite":
            raise AssertionError("%s: not a composite action" % path)
        declared = action.get("inputs") or {}
        unknown = sorted(set(w) - set(declared))
        if unknown:
            raise AssertionError("%s has no input %s" % (repository or path, ", ".join(unknown)))
        github = {"action_path": os.path.abspath(path), "action_ref": ref, "action_repository": repository}
        outer = self.context(env, {}, None, github)
        inputs = {}
        for k, spec in declared.items():
            spec = spec or {}
            inputs[k] = w[k] if k in w else as_input(interpolate(spec.get("default", ""), outer))
        steps_ctx = {}
        status, self.status = self.status, "success"
        for step in action["runs"]["steps"]:
            self.step(step, env, steps_ctx, where=repository or path, inputs=inputs, github=github)
        failed = self.status != "success"
        self.status = status
        ctx = self.context(env, steps_ctx, inputs, github)
        res.outputs = {k: as_input(interpolate((v or {}).get("value", ""), ctx))
                       for k, v in (action.get("outputs") or {}).items()}
        return not failed

    # --- actions/cache ---------------------------------------------------------

    def cache_restore(self, w, env, res, state=None):
        path, key, restore_keys = cache_inputs(w, self.home)
        out = {"cache-primary-key": key}
        e = self.store.find(key, restore_keys) if self.store else None
        if e is not None:
            self.store.restore(e, path)
            out["cache-matched-key"] = e["key"]
            out["cache-hit"] = "true" if e["key"] == key else "false"
            res.stdout += "Cache restored from key: %s\n" % e["key"]
        else:
            res.stdout += "Cache not found for input keys: %s\n" % ", ".join([key] + restore_keys)
        if state is not None:
            state.update(out)
        return out

    def cache_save(self, w, env, res):
        path, key, _ = cache_inputs(w, self.home)
        if not self.store.save(key, path):
            res.stdout += "Warning: cache not saved under %s (key taken, or nothing at %s)\n" % (key, path)
        return {}

    def cache_both(self, w, env, res):
        state = {}
        out = self.cache_restore(w, env, res, state)

        def post():
            if self.status == "success" and state.get("cache-hit") != "true":
                self.cache_save(w, env, StepResult("Post " + res.name, None, ""))
        self.posts.append(post)
        return {k: v for k, v in out.items() if k == "cache-hit"}

    # --- what the tests read ------------------------------------------------------

    def find(self, name, where=None):
        """The result of the step called name (its name:, id: or uses:), the last one."""
        found = [r for r in self.results if name in (r.name, r.id) and (where is None or r.where == where)]
        if not found:
            raise AssertionError("no step %r among %r" % (name, [r.name for r in self.results]))
        return found[-1]


def load_yaml(path):
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def workflow_on(wf):
    """A workflow's `on:` (PyYAML reads the bare key on as True, YAML 1.1)."""
    return wf.get("on", wf.get(True))


# ----------------------------------------------------------------------------
# Releases
# ----------------------------------------------------------------------------

class Release:
    """A release directory as dist/release.sh makes it (dist/README.md): the one named by
    PRECOMPRESS_RELEASE, else a stand-in with the same layout made from the program under
    test (PRECOMPRESS): precompress-VERSION-linux-x86_64.tar.gz holding
    precompress-VERSION-linux-x86_64/ (precompress, precompress.1 when the build made it,
    completions/, LICENSE, README.md), the same as precompress-VERSION-linux-aarch64.tar.gz
    (this machine's program under the aarch64 name: an ARM64 runner's path runs here), and
    SHA256SUMS."""

    def __init__(self, workdir, program):
        self.version = project_version()
        self.env = {}
        given = os.environ.get("PRECOMPRESS_RELEASE")
        if given:
            self.dir = given
            self.standin = False
            self.what = "the release in PRECOMPRESS_RELEASE=%s" % given
            for fn in (self.tarball("x86_64"), "SHA256SUMS"):
                if not os.path.isfile(os.path.join(given, fn)):
                    raise AssertionError("PRECOMPRESS_RELEASE=%s has no %s (version %s)" % (given, fn, self.version))
        else:
            self.dir = os.path.join(workdir, "release")
            self.standin = True
            self.what = "a stand-in release made from %s" % program
            self.make_standin(program)

    def tarball(self, arch):
        return "precompress-%s-linux-%s.tar.gz" % (self.version, arch)

    def make_standin(self, program):
        os.makedirs(self.dir)
        for arch in ("x86_64", "aarch64"):
            top = "precompress-%s-linux-%s" % (self.version, arch)
            stage = os.path.join(self.dir + ".stage", top)
            os.makedirs(os.path.join(stage, "completions"))
            shutil.copy2(program, os.path.join(stage, "precompress"))
            build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(program))))
            man = os.path.join(build, "man", "precompress.1")
            if os.path.isfile(man):
                shutil.copy2(man, os.path.join(stage, "precompress.1"))
            comp = os.path.join(SRC_ROOT, "src", "cli", "completions")
            for n in sorted(os.listdir(comp)):
                shutil.copy2(os.path.join(comp, n), os.path.join(stage, "completions", n))
            for n in ("LICENSE", "README.md", "CHANGELOG.md"):
                if os.path.isfile(os.path.join(SRC_ROOT, n)):
                    shutil.copy2(os.path.join(SRC_ROOT, n), os.path.join(stage, n))
            with tarfile.open(os.path.join(self.dir, self.tarball(arch)), "w:gz") as t:
                t.add(stage, arcname=top)
            shutil.rmtree(os.path.dirname(stage))
        write_sums(self.dir)

    def copy_to(self, dst):
        """The tarballs and SHA256SUMS (what the action downloads), copied: a test may tamper."""
        os.makedirs(dst, exist_ok=True)
        for n in os.listdir(self.dir):
            if n == "SHA256SUMS" or re.match(r"precompress-.*-linux-[a-z0-9_]+\.tar\.gz$", n):
                shutil.copy2(os.path.join(self.dir, n), os.path.join(dst, n))
        return dst


def write_sums(d):
    names = sorted(n for n in os.listdir(d) if n != "SHA256SUMS" and os.path.isfile(os.path.join(d, n)))
    with open(os.path.join(d, "SHA256SUMS"), "w") as f:
        for n in names:
            f.write("%s  %s\n" % (sha256(os.path.join(d, n)), n))


# ----------------------------------------------------------------------------
# A loopback HTTP server
# ----------------------------------------------------------------------------

class Server:
    """Serves a directory on 127.0.0.1 (a free port) from a thread; keeps each request's path
    and Authorization header."""

    def __init__(self, root):
        self.root = root
        self.requests = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=server.root, **kw)

            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Authorization")))
                super().do_GET()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def paths(self):
        return [p for p, _ in self.requests]


@contextlib.contextmanager
def serve(root):
    s = Server(root)
    try:
        yield s
    finally:
        s.close()


def runner_env(env):
    """env without what a GitHub-hosted runner would not have: proxies (a loopback server must
    be reached directly), our cache variable, and a precompress of the machine's on PATH (one
    installed in /usr/local/bin by README's install block would be found before the action
    installs one, or after it failed to)."""
    e = dict(env)
    for k in list(e):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy") or k in (
                "PRECOMPRESS_CACHE_DIR", "UV_THREADPOOL_SIZE", "PRECOMPRESS_RELEASE"):
            del e[k]
    e["PATH"] = os.pathsep.join(d for d in e.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                                if d and not os.path.exists(os.path.join(d, "precompress")))
    return e
