"""jsonschema_lite - a small JSON Schema (draft 2020-12) validator, standard library only.

It supports the subset that protocol/schemas/*.schema.json use, and refuses
(SchemaError) any other keyword, so a schema cannot silently rely on
something this validator ignores:

  type (a name or a list of names), properties, required,
  additionalProperties (true/false or a schema), items (one schema), enum,
  const, oneOf, anyOf, allOf, minimum, maximum, minItems, maxItems,
  minLength, maxLength (in code points),
  $ref ("#/json/pointer" in the same file, "other.schema.json#/pointer" in a
  sibling file), $defs; and the annotations $schema, $id, $comment, title,
  description, examples, default, which do not affect validation.

Values compare the JSON way: true is not 1, 1 equals 1.0, and an integer is
a number with no fractional part (so 2.0 is an integer, as the spec says).

Failures carry a readable path into the instance, "$" for the root:

    $.message.usage.cost.total: -1 is less than the minimum 0

For a oneOf/anyOf that nothing matched, the report comes from the branch
the value was meant for: the one whose const properties ("type", "role",
"command", "success", ...) matched most. When those branches all differ
only in one const, the report lists the values it may have:

    $.type: "nope" is not one of ["ready", "agent_start", ...]

Usage:

    v = Validator("protocol/schemas")
    v.validate(obj, "events.schema.json")          # raises ValidationError
    errors = v.errors(obj, "events.schema.json")   # [] when valid
"""

import json
import math
import os
import re

__all__ = ["SchemaError", "ValidationError", "Validator"]

_ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "examples", "default", "$defs"}
_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "oneOf", "anyOf", "allOf", "minimum", "maximum", "minItems", "maxItems", "$ref",
    "minLength", "maxLength",
}
_TYPES = {"null", "boolean", "object", "array", "number", "integer", "string"}
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


class SchemaError(Exception):
    """The schema itself is broken: unknown keyword, bad $ref, unreadable file."""


class ValidationError(Exception):
    """The instance does not match. `errors` lists (path, message) pairs."""

    def __init__(self, errors):
        self.errors = [(p, m) for p, m in errors]
        super().__init__("\n".join("%s: %s" % e for e in self.errors))

    @property
    def path(self):
        return self.errors[0][0]


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if math.isfinite(value) and value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    raise TypeError("not a JSON value: %r" % (value,))


def _has_type(value, name):
    actual = _json_type(value)
    return actual == name or (name == "number" and actual == "integer")


def _json_equal(a, b):
    """Equality as JSON sees it: booleans are not numbers; 1 == 1.0."""
    ta, tb = _json_type(a), _json_type(b)
    numeric = ("integer", "number")
    if ta in numeric and tb in numeric:
        return a == b
    if ta != tb:
        return False
    if ta == "array":
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if ta == "object":
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return a == b


def _short(value, limit=60):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join(path, key):
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    if _IDENT.match(key):
        return "%s.%s" % (path, key)
    return "%s[%s]" % (path, json.dumps(key, ensure_ascii=False))


def _unique(values):
    out = []
    for v in values:
        if not any(_json_equal(v, o) for o in out):
            out.append(v)
    return out


class _Error(tuple):
    """(path, message), plus what a union report needs: `kind` is "const"
    (with `expected`, a list of allowed values, and `got`), "type" (with
    `expected`, a list of type names, and `got`) or "other"; `depth` is how
    many steps below the root the path lies."""

    def __new__(cls, path, depth, message, kind="other", expected=None, got=None):
        self = super().__new__(cls, (path, message))
        self.depth = depth
        self.kind = kind
        self.expected = expected
        self.got = got
        return self


def _const_error(path, depth, expected, got):
    if len(expected) == 1:
        message = "expected %s, got %s" % (_short(expected[0]), _short(got))
    else:
        message = "%s is not one of %s" % (_short(got), _short(expected, 400))
    return _Error(path, depth, message, "const", expected, got)


def _type_error(path, depth, names, got):
    message = "expected %s, got %s %s" % (" or ".join(names), _json_type(got), _short(got))
    return _Error(path, depth, message, "type", names, got)


class _Result:
    """What checking one value against one schema found: errors, and the
    (path, depth) of every const that matched: how a union tells which
    branch was meant."""

    __slots__ = ("errors", "hits")

    def __init__(self):
        self.errors = []
        self.hits = []


class Validator:
    """Loads schema files from one directory (lazily, cached) and validates."""

    def __init__(self, schema_dir):
        self.schema_dir = os.path.abspath(schema_dir)
        self._docs = {}

    # Loading and references.

    def document(self, name):
        """The parsed schema file `name` (relative to schema_dir)."""
        if name not in self._docs:
            path = os.path.join(self.schema_dir, name)
            try:
                with open(path, encoding="utf-8") as f:
                    self._docs[name] = json.load(f)
            except (OSError, ValueError) as e:
                raise SchemaError("cannot load schema %s: %s" % (path, e)) from e
        return self._docs[name]

    def resolve(self, ref, base):
        """(document name, schema) that `ref` names, relative to document `base`."""
        doc_name, _, pointer = ref.partition("#")
        doc_name = doc_name or base
        if "/" in doc_name or "\\" in doc_name or doc_name.startswith("."):
            raise SchemaError("$ref %r: only files in the same directory are supported" % ref)
        node = self.document(doc_name)
        if pointer:
            if not pointer.startswith("/"):
                raise SchemaError("$ref %r: the fragment must be a JSON pointer" % ref)
            for token in pointer[1:].split("/"):
                token = token.replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and token in node:
                    node = node[token]
                elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                    node = node[int(token)]
                else:
                    raise SchemaError("$ref %r (from %s) does not resolve" % (ref, base))
        return doc_name, node

    # Validation.

    def errors(self, instance, schema_file, pointer=""):
        """All (path, message) pairs; [] when the instance is valid.
        `pointer` ("/$defs/Name") picks a definition inside the file."""
        doc, schema = self.resolve(schema_file + ("#" + pointer if pointer else ""), schema_file)
        res = _Result()
        self._check(instance, schema, doc, "$", 0, res)
        return [(p, m) for p, m in res.errors]

    def validate(self, instance, schema_file, pointer=""):
        errs = self.errors(instance, schema_file, pointer)
        if errs:
            raise ValidationError(errs)

    def is_valid(self, instance, schema_file, pointer=""):
        return not self.errors(instance, schema_file, pointer)

    def _check(self, value, schema, doc, path, depth, res):
        if schema is True:
            return
        if schema is False:
            res.errors.append(_Error(path, depth, "no value is allowed here"))
            return
        if not isinstance(schema, dict):
            raise SchemaError("%s: a schema must be an object or a boolean, not %s" % (doc, _short(schema)))
        unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
        if unknown:
            raise SchemaError("%s: unsupported keyword(s) %s" % (doc, ", ".join(sorted(unknown))))

        if "$ref" in schema:
            ref_doc, target = self.resolve(schema["$ref"], doc)
            self._check(value, target, ref_doc, path, depth, res)

        if "type" in schema:
            names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            for name in names:
                if name not in _TYPES:
                    raise SchemaError("%s: unknown type %r" % (doc, name))
            if not any(_has_type(value, n) for n in names):
                res.errors.append(_type_error(path, depth, names, value))
                return  # the other keywords would only repeat the complaint

        if "const" in schema:
            if _json_equal(value, schema["const"]):
                res.hits.append((path, depth))
            else:
                res.errors.append(_const_error(path, depth, [schema["const"]], value))
        if "enum" in schema and not any(_json_equal(value, e) for e in schema["enum"]):
            res.errors.append(_const_error(path, depth, list(schema["enum"]), value))

        if _json_type(value) in ("integer", "number"):
            if "minimum" in schema and value < schema["minimum"]:
                res.errors.append(_Error(path, depth, "%s is less than the minimum %s" % (
                    _short(value), schema["minimum"])))
            if "maximum" in schema and value > schema["maximum"]:
                res.errors.append(_Error(path, depth, "%s is more than the maximum %s" % (
                    _short(value), schema["maximum"])))

        if isinstance(value, str):
            if "minLength" in schema and len(value) < schema["minLength"]:
                res.errors.append(_Error(path, depth, "%d character(s), at least %d required" % (
                    len(value), schema["minLength"])))
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                res.errors.append(_Error(path, depth, "%d character(s), at most %d allowed" % (
                    len(value), schema["maxLength"])))

        if isinstance(value, dict):
            props = schema.get("properties", {})
            for name in schema.get("required", []):
                if name not in value:
                    res.errors.append(_Error(_join(path, name), depth + 1, "required property is missing"))
            for name, item in value.items():
                if name in props:
                    self._check(item, props[name], doc, _join(path, name), depth + 1, res)
                elif "additionalProperties" in schema:
                    extra = schema["additionalProperties"]
                    if extra is False:
                        res.errors.append(_Error(_join(path, name), depth + 1,
                                                 "property is not allowed (allowed: %s)" % (
                                                     ", ".join(props) or "none")))
                    else:
                        self._check(item, extra, doc, _join(path, name), depth + 1, res)

        if isinstance(value, list):
            if "minItems" in schema and len(value) < schema["minItems"]:
                res.errors.append(_Error(path, depth, "%d item(s), at least %d required" % (
                    len(value), schema["minItems"])))
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                res.errors.append(_Error(path, depth, "%d item(s), at most %d allowed" % (
                    len(value), schema["maxItems"])))
            if "items" in schema:
                for i, item in enumerate(value):
                    self._check(item, schema["items"], doc, _join(path, i), depth + 1, res)

        for sub in schema.get("allOf", []):
            self._check(value, sub, doc, path, depth, res)
        for keyword in ("anyOf", "oneOf"):
            if keyword not in schema:
                continue
            branches = []
            for sub in schema[keyword]:
                b = _Result()
                self._check(value, sub, doc, path, depth, b)
                branches.append(b)
            matched = [i for i, b in enumerate(branches) if not b.errors]
            if keyword == "oneOf" and len(matched) > 1:
                res.errors.append(_Error(path, depth, "matches %d oneOf branches (%s), exactly one required" % (
                    len(matched), ", ".join(_label(schema[keyword][i], i) for i in matched))))
            elif matched:
                res.hits.extend(branches[matched[0]].hits)
            else:
                errors, hits = _closest(branches, path, depth)
                res.errors.extend(errors)
                res.hits.extend(hits)


def _label(schema, index):
    if isinstance(schema, dict) and "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    return "#%d" % index


def _closest(branches, path, depth):
    """The errors (and const hits) to report for a union nothing matched.

    The branches meant are those whose consts just below `path` matched
    most (type and success matched, only command did not). When each of
    them failed one const at the same path, the value is just none of the
    allowed ones: one error lists them all. Otherwise the one of them whose
    errors lie deepest, then with the fewest errors, speaks; when several
    tie on a single error at the same path, their complaints are joined."""
    child = depth + 1

    def score(b):
        return len({p for p, d in b.hits if d == child})

    best_score = max(score(b) for b in branches)
    meant = [b for b in branches if score(b) == best_score]

    consts = [next((e for e in b.errors if e.kind == "const" and e.depth == child), None) for b in meant]
    if len(meant) > 1 and all(consts) and len({e[0] for e in consts}) == 1:
        allowed = _unique(v for e in consts for v in e.expected)
        return [_const_error(consts[0][0], child, allowed, consts[0].got)], meant[0].hits

    types = [b.errors[0] for b in meant if len(b.errors) == 1 and b.errors[0].kind == "type"]
    if len(types) == len(meant) and all(e.depth == depth for e in types):
        names = []
        for e in types:
            names.extend(n for n in e.expected if n not in names)
        return [_type_error(path, depth, names, types[0].got)], []

    def rank(b):
        return (max(e.depth for e in b.errors), -len(b.errors))

    meant.sort(key=rank, reverse=True)
    top = meant[0]
    ties = [b for b in meant if rank(b) == rank(top)]
    if len(ties) > 1 and all(len(b.errors) == 1 and b.errors[0][0] == top.errors[0][0] for b in ties):
        messages = []
        for b in ties:
            if b.errors[0][1] not in messages:
                messages.append(b.errors[0][1])
        e = top.errors[0]
        return [_Error(e[0], e.depth, " / ".join(messages))], top.hits
    return list(top.errors), top.hits

