"""stoker.conditionals: ``enable_conditionals=True`` -- ``if``/``elif``/``else`` on a DataNode inside a
pipeline function, as DALI's AutoGraph-style conversion gives them.

:func:`convert` rewrites the function's source (its AST) once, when the pipeline is created: every
``if`` statement of the function body becomes

    pred = <test>
    if not conditionals.is_node(pred):
        if pred: <then> else: <else>           # a plain Python condition runs as Python
    else:
        def then_branch(<vars>): <then>; return <vars>
        def else_branch(<vars>): <else>; return <vars>
        <vars> = conditionals.merge(pred, then_branch, else_branch, <values before>, <names>)

where <vars> are the names either branch assigns. With a node predicate both branches are built
(every operator of both runs for every sample; with the same seed the same bytes, since random
operators draw per operator and sample) and each variable is merged per sample by the
``_conditional.merge`` operator: the ``if`` branch's value where the predicate is true, else the
``else`` branch's. DALI's rules: a variable assigned in only one branch must be defined before the
``if``; the branches must give it one dtype and number of dimensions; the predicate is a per-sample
scalar on the CPU. ``not``, ``and`` and ``or`` in the test work on nodes too. An ``if`` whose
branches contain ``return``, ``break``, ``continue`` or ``yield`` is left as Python (a node test
there raises the DataNode truth-value error). Definition time only.
"""
import ast
import inspect
import textwrap

from .graph import DataNode
from .errors import ArgumentError

_UNDEFINED = type("Undefined", (), {"__repr__": lambda self: "<undefined>"})()
_HELPER = "_stk_conditionals"


def is_node(value):
    return isinstance(value, DataNode)


def not_(value):
    return (value == 0) if is_node(value) else (not value)


def _as_bool(value):
    return value != 0


def and_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_node(value):
            other = thunk()
            value = _as_bool(value) & (_as_bool(other) if is_node(other) else bool(other))
        elif not value:
            return value
        else:
            value = thunk()
    return value


def or_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_node(value):
            other = thunk()
            value = _as_bool(value) | (_as_bool(other) if is_node(other) else bool(other))
        elif value:
            return value
        else:
            value = thunk()
    return value


def local_value(namespace, name):
    return namespace.get(name, _UNDEFINED)


def _merge_value(predicate, name, then_value, else_value):
    from . import fn

    if then_value is else_value:
        return then_value
    if then_value is _UNDEFINED or else_value is _UNDEFINED:
        raise ArgumentError(
            "variable '%s' is assigned in only one branch of an `if` on a DataNode and is not defined before it; "
            "define it before the `if` or assign it in both branches (DALI's rule)" % name)
    if is_node(then_value) and is_node(else_value):
        if then_value.device == "gpu" or else_value.device == "gpu":
            then_value, else_value = then_value.gpu(), else_value.gpu()
        return fn._conditional.merge(then_value, else_value, predicate=predicate)
    if isinstance(then_value, (tuple, list)) and isinstance(else_value, (tuple, list)) and \
            type(then_value) is type(else_value) and len(then_value) == len(else_value):
        return type(then_value)(_merge_value(predicate, "%s[%d]" % (name, i), t, e)
                                for i, (t, e) in enumerate(zip(then_value, else_value)))
    if not is_node(then_value) and not is_node(else_value):
        try:
            if then_value == else_value:
                return then_value
        except Exception:  # noqa: BLE001 (a value without ==: reported below)
            pass
    raise ArgumentError(
        "variable '%s' gets %r in the `if` branch and %r in the `else` branch of an `if` on a DataNode: "
        "both must be DataNodes (or the same Python value)" % (name, then_value, else_value))


def merge(predicate, then_branch, else_branch, before, names):
    """Runs both branches from the values before the `if` and merges each variable per sample."""
    if predicate.device != "cpu":
        raise ArgumentError("the condition of an `if` (%s) must be on the CPU, as in DALI" % predicate.name)
    then_values = then_branch(*before)
    else_values = else_branch(*before)
    return tuple(_merge_value(predicate, name, t, e) for name, t, e in zip(names, then_values, else_values))


# ---- the rewrite -----------------------------------------------------------------------------
class _Assigned(ast.NodeVisitor):
    """Names a block assigns (not looking into nested functions, classes or comprehensions)."""

    def __init__(self):
        self.names = []
        self.escapes = False

    def _add(self, name):
        if name not in self.names and not name.startswith("_stk_"):  # the rewrite's own temporaries
            self.names.append(name)

    def visit_Name(self, node):  # noqa: N802
        if isinstance(node.ctx, ast.Store):
            self._add(node.id)

    def visit_FunctionDef(self, node):  # noqa: N802
        self._add(node.name)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef  # noqa: N815

    def visit_Lambda(self, node):  # noqa: N802
        pass

    def visit_ListComp(self, node):  # noqa: N802
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp  # noqa: N815

    def visit_Import(self, node):  # noqa: N802
        for alias in node.names:
            self._add((alias.asname or alias.name).split(".")[0])

    visit_ImportFrom = visit_Import  # noqa: N815

    def visit_Return(self, node):  # noqa: N802
        self.escapes = True

    visit_Break = visit_Continue = visit_Yield = visit_YieldFrom = visit_Global = visit_Nonlocal = visit_Return  # noqa


def _assigned(blocks):
    visitor = _Assigned()
    for block in blocks:
        for statement in block:
            visitor.visit(statement)
    return visitor.names, visitor.escapes


def _call(name, args):
    return ast.Call(func=ast.Attribute(value=ast.Name(_HELPER, ast.Load()), attr=name, ctx=ast.Load()),
                    args=args, keywords=[])


class _TestRewriter(ast.NodeTransformer):
    """`not`, `and`, `or` in an `if` test, so they work on nodes."""

    def visit_UnaryOp(self, node):  # noqa: N802
        self.generic_visit(node)
        return _call("not_", [node.operand]) if isinstance(node.op, ast.Not) else node

    def visit_BoolOp(self, node):  # noqa: N802
        self.generic_visit(node)
        thunks = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                             body=value) for value in node.values]
        return _call("and_" if isinstance(node.op, ast.And) else "or_", thunks)

    def visit_Lambda(self, node):  # noqa: N802
        return node


class _IfRewriter(ast.NodeTransformer):
    def __init__(self):
        self.count = 0

    def visit_FunctionDef(self, node):  # noqa: N802 (nested functions are left alone)
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef  # noqa: N815

    def visit_If(self, node):  # noqa: N802
        self.generic_visit(node)  # inner ifs first
        names, escapes = _assigned([node.body, node.orelse])
        if escapes:
            return node
        k = self.count
        self.count += 1
        pred, then_name, else_name = "_stk_pred_%d" % k, "_stk_then_%d" % k, "_stk_else_%d" % k
        test = _TestRewriter().visit(node.test)
        params = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], kwonlyargs=[], kw_defaults=[],
                               defaults=[])
        result = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load()))
        then_def = _function_def(name=then_name, args=params, body=list(node.body) + [result], decorator_list=[],
                                   returns=None, type_comment=None)
        else_def = _function_def(name=else_name, args=params, body=list(node.orelse) + [result], decorator_list=[],
                                   returns=None, type_comment=None)
        before = ast.Tuple([_call("local_value", [ast.Call(ast.Name("locals", ast.Load()), [], []),
                                                   ast.Constant(n)]) for n in names], ast.Load())
        merged = _call("merge", [ast.Name(pred, ast.Load()), ast.Name(then_name, ast.Load()),
                                 ast.Name(else_name, ast.Load()), before,
                                 ast.Tuple([ast.Constant(n) for n in names], ast.Load())])
        targets = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        node_branch = [then_def, else_def, ast.Assign(targets=[targets], value=merged)] if names else [
            ast.Expr(merged)]
        python_if = ast.If(test=ast.Name(pred, ast.Load()), body=node.body, orelse=node.orelse)
        statements = [
            ast.Assign(targets=[ast.Name(pred, ast.Store())], value=test),
            ast.If(test=ast.UnaryOp(ast.Not(), _call("is_node", [ast.Name(pred, ast.Load())])),
                   body=[python_if], orelse=node_branch),
        ]
        for statement in statements:
            ast.copy_location(statement, node)
        return statements


def _function_def(**fields):
    node = ast.FunctionDef(**fields)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        node.type_params = []
    return node


def convert(func):
    """func with its `if` statements rewritten for node predicates (see the module doc). A function
    whose source cannot be read (a lambda, the REPL) comes back unchanged."""
    if getattr(func, "_stk_converted", False):
        return func
    try:
        source = textwrap.dedent(inspect.getsource(func))
        filename = inspect.getsourcefile(func) or "<pipeline>"
        first_line = inspect.getsourcelines(func)[1]
    except (OSError, TypeError):
        return func
    tree = ast.parse(source)
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        return func
    definition.decorator_list = []
    rewriter = _IfRewriter()
    definition.body = [rewriter.visit(statement) for statement in definition.body]
    flat = []
    for statement in definition.body:
        flat.extend(statement if isinstance(statement, list) else [statement])
    definition.body = flat
    if rewriter.count == 0:
        return func
    freevars = list(func.__code__.co_freevars)
    factory = _function_def(
        name="_stk_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in [_HELPER] + freevars], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=[definition, ast.Return(ast.Name(definition.name, ast.Load()))], decorator_list=[], returns=None,
        type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, first_line - 1)
    namespace = {}
    exec(compile(module, filename, "exec"), func.__globals__, namespace)  # noqa: S102 (the user's own code)
    import sys

    cells = [cell.cell_contents for cell in (func.__closure__ or ())]
    converted = namespace["_stk_factory"](sys.modules[__name__], *cells)
    converted.__defaults__ = func.__defaults__
    converted.__kwdefaults__ = func.__kwdefaults__
    converted.__doc__ = func.__doc__
    converted._stk_converted = True
    return converted
