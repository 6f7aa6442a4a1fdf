"""The runner harness: runs one step inside the sandbox (stdlib only, mounted read-only).

Started as `python -I -S /harness/runner.py` with an empty environment. It
1. reads the request (code, inputs, environment) from stdin until end of file, so a warm
   sandbox can wait here with the runtime loaded;
2. sets the environment (os.environ, once the step imports os) to exactly the declared
   variables;
3. compiles the step's code: code that does not compile is reported as a syntax error before
   any of it runs;
4. writes "started" on the report channel (fd 3) as the code's first instruction is about to
   run, then runs the code, calls main(**inputs) and reports the JSON result or a structured
   error with traceback lines into step.py.

The step's imports were checked against its standard library on the platform, before this
sandbox existed (a step that needs repair never gets one). The code is run with `exec` on its
text, never with `compile()`: an interpreter's first `compile()` call sets up the node types of
the `ast` module, which costs more than a millisecond of every cold step.

The report channel is untrusted by the platform: the step shares this interpreter and could
write anything on fd 3. Only what is reported before "started" comes from an intact harness.
"""

import _imp
import sys

# `posix` is built in and already loaded; `os` would cost its own import (and
# `collections.abc`'s) on every start. The step gets the real `os` when it imports it, and its
# `os.environ` is then built from `posix.environ`, which `set_environment` fills.
import posix

REPORT_FD = 3
STEP_FILE = "step.py"

# The start path avoids the `ast`, `json` and `traceback` modules: together they import `re`,
# `enum`, `contextlib` and more, which costs more than the interpreter's own start. The C
# accelerators below are what `json` itself uses; `json` is the fallback where they differ.
try:
    import _json

    class _DecodeContext:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        memo = {}

        @staticmethod
        def parse_constant(name):
            raise ValueError("%s is not valid JSON" % name)

    _SCANNER = _json.make_scanner(_DecodeContext)

    def _reject_unknown(value):
        raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)

    def _skip_space(text, index):
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        return index

    def json_loads(text):
        try:
            value, end = _SCANNER(text, _skip_space(text, 0))
        except StopIteration as error:
            raise ValueError("invalid JSON at %d" % error.value) from None
        if _skip_space(text, end) != len(text):
            raise ValueError("extra data after the JSON value at %d" % end)
        return value

    def json_dumps(value):
        encoder = _json.make_encoder(
            {}, _reject_unknown, _json.encode_basestring_ascii, None, ": ", ", ", False, False, False
        )
        return "".join(encoder(value, 0))

except (ImportError, AttributeError, TypeError):
    import json

    def json_loads(text):
        return json.loads(text)

    def json_dumps(value):
        return json.dumps(value, allow_nan=False)


def set_environment(variables):
    """Makes the process environment exactly `variables`, as os.environ.clear() and item
    assignment would: the C environment through putenv/unsetenv, and `posix.environ`, from
    which `os` builds os.environ when it is imported."""
    encoding = sys.getfilesystemencoding()
    for name in list(posix.environ):
        posix.unsetenv(name)
    posix.environ.clear()
    for name, value in variables:
        posix.putenv(name, value)
        posix.environ[name.encode(encoding, "surrogateescape")] = value.encode(encoding, "surrogateescape")


def report(event):
    line = (json_dumps(event) + "\n").encode("utf-8")
    view = memoryview(line)
    while view:
        written = posix.write(REPORT_FD, view)
        view = view[written:]


# What parsing or compiling raises for code that cannot become a program: a syntax error, a
# null byte (ValueError), or code nested too deeply or too large to compile.
UNCOMPILABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def syntax_error(error):
    """The report of code that cannot be compiled, naming the line where Python knows it."""
    line = getattr(error, "lineno", None) or 0
    if isinstance(error, SyntaxError):
        message = error.msg
    else:
        message = "the code cannot be compiled: %s: %s" % (type(error).__name__, error)
    text = (getattr(error, "text", None) or "").strip()
    return {
        "event": "error",
        "kind": "SyntaxError",
        "message": "%s (%s:%s)" % (message, STEP_FILE, line),
        "traceback": ["%s:%s: %s" % (STEP_FILE, line, text)],
    }


def step_traceback(error):
    """Traceback lines that point into the step's code, as step.py:LINE."""
    import traceback

    lines = []
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename != STEP_FILE:
            continue
        text = "%s:%d in %s" % (STEP_FILE, frame.lineno, frame.name)
        if frame.line:
            text += ": " + frame.line.strip()
        lines.append(text)
    return lines


def describe(error):
    return {
        "event": "error",
        "kind": type(error).__name__,
        "message": str(error),
        "traceback": step_traceback(error),
    }


def main():
    # The runtime is loaded: a pooled sandbox is ready to be claimed from here on. Only the
    # local backend asks for this line (its warm pool waits for it).
    if "--announce-ready" in sys.argv[1:]:
        report({"event": "ready"})
    request = json_loads(sys.stdin.buffer.read().decode("utf-8"))
    # The request pipe is done; nothing more is read from it.
    devnull = posix.open("/dev/null", posix.O_RDONLY)
    posix.dup2(devnull, 0)
    posix.close(devnull)

    set_environment(request["env"])
    del request["env"]

    code = request["code"]
    result_limit = int(request["result_limit"])
    try:
        inputs = json_loads(request["inputs_json"])
    except ValueError as error:
        report({"event": "error", "kind": "InvalidInputs", "message": str(error), "traceback": []})
        return
    if not isinstance(inputs, dict):
        report({"event": "error", "kind": "InvalidInputs", "message": "inputs must be a JSON object", "traceback": []})
        return

    namespace = {"__name__": "step", "__file__": STEP_FILE, "__builtins__": __builtins__}
    entered = []

    def on_entry(frame, event, _arg):
        # `exec` has compiled the step and enters its module code: before that code's first
        # instruction, its file name becomes step.py (for tracebacks) and "started" is sent.
        # Earlier events (exec's own call) and other frames are not the step's.
        if event != "call" or entered:
            return
        code_object = frame.f_code
        if code_object.co_name != "<module>" or code_object.co_filename != "<string>":
            return
        sys.setprofile(None)
        entered.append(True)
        _imp._fix_co_filename(code_object, STEP_FILE)
        report({"event": "started"})

    try:
        sys.setprofile(on_entry)
        try:
            exec(code, namespace)
        finally:
            sys.setprofile(None)
        if not entered:
            raise RuntimeError("the step's code was compiled but never entered")
        entry = namespace.get("main")
        if not callable(entry):
            report({"event": "error", "kind": "MissingMain", "message": "the step defines no main()", "traceback": []})
            return
        result = entry(**inputs)
    except BaseException as error:  # noqa: B036 - SystemExit and KeyboardInterrupt are step errors too
        if not entered:
            # Nothing of the step ran: the code did not compile (some errors only the
            # compiler finds, such as `return` outside a function, are syntax errors too).
            if isinstance(error, UNCOMPILABLE):
                report(syntax_error(error))
            else:
                report({"event": "harness_error", "detail": "%s: %s" % (type(error).__name__, error)})
            return
        # Only now is linecache needed, for the source lines of the traceback.
        import linecache

        linecache.cache[STEP_FILE] = (len(code), None, code.splitlines(True), STEP_FILE)
        report(describe(error))
        return
    try:
        text = json_dumps(result)
    except (TypeError, ValueError) as error:
        report({
            "event": "error",
            "kind": "ResultNotSerializable",
            "message": "main() returned a value that is not JSON-serialisable: %s" % error,
            "traceback": [],
        })
        return
    if len(text.encode("utf-8")) > result_limit:
        report({
            "event": "error",
            "kind": "ResultTooLarge",
            "message": "main() returned %d bytes of JSON; the limit is %d" % (len(text.encode("utf-8")), result_limit),
            "traceback": [],
        })
        return
    report({"event": "result", "json": text})


if __name__ == "__main__":
    try:
        main()
    except BaseException as error:  # noqa: B036 - the platform must hear about any harness failure
        try:
            report({"event": "harness_error", "detail": "%s: %s" % (type(error).__name__, error)})
        except BaseException:  # noqa: B036
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: B036
            pass
        # Ends the sandbox's first process at once; the kernel then kills anything the step
        # left running in the pid namespace.
        posix._exit(0)
