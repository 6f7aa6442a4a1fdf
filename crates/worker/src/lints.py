# The authoring lints of `stepward check` (issue 17, section 4), read from a step's `ast`;
# nothing is executed. `lint(tree, main)` answers what the Rust side turns into warnings:
#   writes:       each call that makes a request with a body or a method other than GET/HEAD
#                 (for `networked-write-ungated`);
#   offline_work: the first statement of `main`, before its first request, that is work
#                 needing no network (for `offline-work-in-networked-step`).
import ast

# More than this many statements of `main` before its first request are work that belongs in
# an offline step; see `OFFLINE_WORK_STATEMENTS` in lints.rs for why it is 3.
OFFLINE_WORK_STATEMENTS = 3

READ_METHODS = {"GET", "HEAD"}
# Calls that open a connection or send a request.
NETWORK_NAMES = {"urlopen", "Request", "HTTPConnection", "HTTPSConnection",
                 "create_connection", "socket", "getaddrinfo", "build_opener"}
NETWORK_ATTRIBUTES = {"urlopen", "request", "getresponse", "connect", "sendall", "send",
                      "putrequest", "endheaders", "open"}
# Calls that parse text: parsing needs no network and can be retried offline.
PARSE_CALLS = {"loads", "load", "literal_eval", "strptime", "fromisoformat", "reader",
               "DictReader", "fromstring", "parse", "Decimal", "int", "float", "match",
               "fullmatch", "search", "findall"}


def call_name(call):
    function = call.func
    if isinstance(function, ast.Name):
        return function.id
    if isinstance(function, ast.Attribute):
        return function.attr
    return None


def constant_method(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.upper()
    return None


def where(node, what):
    return {"line": node.lineno, "column": node.col_offset + 1, "what": what}


def writes_of(tree):
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = call_name(node)
        keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        if name in ("Request", "urlopen"):
            data = keywords.get("data", node.args[1] if len(node.args) > 1 else None)
            if data is not None and not (isinstance(data, ast.Constant) and data.value is None):
                found.append(where(node, "`%s(...)` with a body (`data`)" % name))
                continue
            if name == "Request" and "method" in keywords:
                method = constant_method(keywords["method"])
                if method is None:
                    found.append(where(node, "`Request(...)` with a method that is not a "
                                             "constant, which may be a write"))
                elif method not in READ_METHODS:
                    found.append(where(node, "`Request(..., method=\"%s\")`" % method))
        elif name == "request" and isinstance(node.func, ast.Attribute):
            # http.client: connection.request(METHOD, url, body=..., headers=...)
            method_node = node.args[0] if node.args else keywords.get("method")
            if method_node is None:
                continue
            method = constant_method(method_node)
            if method is None:
                found.append(where(node, "`.request(...)` with a method that is not a "
                                         "constant, which may be a write"))
            elif method not in READ_METHODS:
                found.append(where(node, "`.request(\"%s\", ...)`" % method))
    found.sort(key=lambda item: (item["line"], item["column"]))
    return found


def is_network_call(call, networked_helpers):
    name = call_name(call)
    if isinstance(call.func, ast.Name):
        return name in NETWORK_NAMES or name in networked_helpers
    if isinstance(call.func, ast.Attribute):
        return name in NETWORK_ATTRIBUTES or name in NETWORK_NAMES
    return False


def calls_in(node):
    return [inner for inner in ast.walk(node) if isinstance(inner, ast.Call)]


def networked_helpers_of(tree):
    """The module's functions (other than main) whose bodies make a request."""
    helpers = set()
    changed = True
    while changed:
        changed = False
        for node in tree.body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node.name != "main" and node.name not in helpers
                    and any(is_network_call(call, helpers) for call in calls_in(node))):
                helpers.add(node.name)
                changed = True
    return helpers


def needs_no_counting(statement):
    """What a networked step needs anyway: its docstring, imports, credentials from the
    environment, `pass`."""
    if isinstance(statement, (ast.Import, ast.ImportFrom, ast.Pass, ast.Global, ast.Nonlocal)):
        return True
    if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)):
        return True
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        text = ast.dump(statement.value)
        if "attr='environ'" in text or "attr='getenv'" in text:
            return True
    return False


def validates(statement):
    return any(isinstance(node, (ast.Raise, ast.Assert)) for node in ast.walk(statement))


def parses(statement):
    for call in calls_in(statement):
        name = call_name(call)
        if name in PARSE_CALLS:
            # `int(x)` and `float(x)` of an input are parsing; `json.dumps` is not.
            return name
    return None


def offline_work_of(tree, main):
    helpers = networked_helpers_of(tree)
    before = []
    found_request = False
    for statement in main.body:
        if any(is_network_call(call, helpers) for call in calls_in(statement)):
            found_request = True
            break
        before.append(statement)
    if not found_request:
        # No request in `main` itself: nothing to say (the lint is silent rather than wrong).
        return None
    counted = [statement for statement in before if not needs_no_counting(statement)]
    for statement in counted:
        if validates(statement):
            return dict(where(statement, "validates its inputs (`raise` or `assert`) before "
                                         "its first request"), statements=len(counted))
        name = parses(statement)
        if name:
            return dict(where(statement, "parses (`%s(...)`) before its first request" % name),
                        statements=len(counted))
    if len(counted) > OFFLINE_WORK_STATEMENTS:
        return dict(where(counted[0], "runs %d statements before its first request"
                                      % len(counted)), statements=len(counted))
    return None


def lint(tree, main):
    return {"writes": writes_of(tree), "offline_work": offline_work_of(tree, main)}
