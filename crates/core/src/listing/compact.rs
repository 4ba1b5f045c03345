//! Compact tool definitions: one pass over a tool's JSON text that drops
//! members and shortens its description, everything else byte for byte.
//!
//! What may go is decided by where a member is, not by its name alone: a
//! keyword is dropped only inside a JSON Schema object (the schema of
//! `inputSchema` and, past `light`, `outputSchema`, and every subschema
//! reached through the keywords that hold schemas, JSON Schema 2020-12
//! Core §10), never inside `properties` (whose keys are argument names),
//! `enum`, `const`, `required`, `default` or any value the walk does not
//! know. So a property named `title` or `description` stays, and so does
//! every argument name, `type`, `enum`, `required`, `items`, `anyOf` /
//! `oneOf` / `allOf`, `$ref` and `$defs`.
//!
//! - `inputSchema`: at every level `title`, `examples`, `default`,
//!   `$comment` (annotations, 2020-12 Validation §9),
//!   `additionalProperties: false` and an empty `properties` (which
//!   constrains nothing) go; `$schema` goes where the schema
//!   means the same under MCP 2025-11-25's default dialect (2020-12): it
//!   names draft-06, draft-07, 2019-09 or 2020-12 and uses no keyword
//!   whose meaning differs between them (`items` as an array,
//!   `additionalItems`, `dependencies`, `$recursiveRef`,
//!   `$recursiveAnchor`; for draft-06/07 also `$ref`, whose siblings those
//!   drafts ignore). From `medium` every `description` goes too.
//! - `outputSchema` is a contract: clients validate `structuredContent`
//!   against it (MCP 2025-06-18 "Output Schema"). Only annotations that
//!   no validator reads leave it, from `medium`: `description`, `title`,
//!   `examples`, `$comment`; and its root `$schema` under the rule of
//!   `inputSchema`'s, so a validator that picks its dialect from
//!   `$schema` (Python's `jsonschema`) or has one of its own (Ajv in the
//!   TypeScript SDK) reaches the same verdict. `default` stays (a
//!   validator may apply it), and so does every assertion, so exactly the
//!   same `structuredContent` validates.
//! - `execution: {"taskSupport": "forbidden"}` goes at every level: it is
//!   what a tool without `execution` means (MCP 2025-11-25
//!   `ToolExecution.taskSupport`, default `"forbidden"`).
//! - From `medium`, an `annotations` hint goes where a client that applies
//!   the spec's defaults reads the same without it, and one that reads an
//!   absent hint as false is at most more careful (MCP 2025-06-18
//!   `ToolAnnotations`): `readOnlyHint: false` and `idempotentHint: false`
//!   (false by default); beside `readOnlyHint: true`, `destructiveHint:
//!   false` and `idempotentHint: true` (both meaningful only when
//!   `readOnlyHint` is false; read as false, the second only makes a
//!   client retry less). `destructiveHint: true` and `openWorldHint` stay:
//!   a client that reads them without the default would take a destructive
//!   or open-world tool for a safe one. An object that names a hint twice
//!   is left as it is.
//! - The tool's `description`: its first sentence from `medium`, cut to
//!   `max_description_bytes` at `high`.
//! - The tool's `title`, from `medium`, where it has the same letters and
//!   digits as its `name`, case aside ("Create Entities" for
//!   `create_entities`): a client shows the name where there is no title.
//!
//! Every other member of a tool (`name`, any other `title`, the annotations' `title`
//! and other hints, `icons`, `execution`, `_meta`, ...) passes as it is.

use std::borrow::Cow;
use std::ops::Range;

use super::sentence;
use crate::config::Level;
use crate::json::literal::write_literal;

/// Deepest nesting the walk follows; a deeper tool is left as it is
/// (serde_json, which read the listing first, refuses past 128).
const MAX_DEPTH: usize = 128;

/// How far a compaction goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    pub level: Level,
    /// A tool description's most bytes at [`Level::High`].
    pub max_description_bytes: usize,
}

/// `tool` (one tool object's JSON text) compacted; `None` when nothing
/// changes, or when the text is not one JSON object the walk can follow
/// (too deep, malformed): the tool then passes as it came.
pub fn compact_tool(tool: &str, how: Compaction) -> Option<String> {
    let mut w = Walk {
        text: tool,
        b: tool.as_bytes(),
        i: 0,
        how,
        edits: Vec::new(),
        draft_only: false,
        has_ref: false,
        defs: Vec::new(),
        refs: Vec::new(),
        in_def: None,
        unresolved: false,
    };
    w.ws();
    if w.peek()? != b'{' {
        return None;
    }
    w.object(Ctx::Tool, 0)?;
    w.ws();
    if w.i != w.b.len() || w.edits.is_empty() {
        return None;
    }
    w.edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(tool.len());
    let mut at = 0;
    for (span, with) in &w.edits {
        out.push_str(tool.get(at..span.start)?);
        out.push_str(with);
        at = span.end;
    }
    out.push_str(tool.get(at..)?);
    Some(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Input,
    Output,
}

/// Where a value sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Tool,
    /// A JSON Schema object; `true` at the root of `inputSchema` /
    /// `outputSchema`.
    Schema(Side, bool),
    /// The tool's `annotations` (from `medium`).
    Annotations,
    /// An object whose values are schemas (`properties`, ...).
    Map(Side),
    /// The root schema's `$defs` (or draft-07 `definitions`): its entries
    /// go when nothing refers to them.
    Defs(Side),
    /// An array of schemas (`anyOf`, `prefixItems`, ...).
    List(Side),
    /// Anything else: read, never changed.
    Opaque,
}

/// What becomes of one member.
enum Act {
    Keep(Ctx),
    Drop,
    /// The tool description: shortened.
    Describe,
    /// The root `$schema` of `inputSchema`, dropped unless a keyword seen
    /// below it depends on the dialect; the flag says whether it names a
    /// dialect that ignores `$ref`'s siblings.
    Dialect(bool),
    /// An annotation hint (which of the four, and what its value allows),
    /// dropped or not when its object closes.
    Hint(u8, Hint),
    /// The tool's `name`: kept, and read for its `title`.
    Name,
    /// The tool's `title` (from `medium`): dropped when it says no more
    /// than the name.
    Title,
}

/// An annotation hint whose absence may mean the same as its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    /// `readOnlyHint` or `idempotentHint` written `false`: goes.
    FalseByDefault,
    /// `destructiveHint: false` or `idempotentHint: true`: goes beside
    /// `readOnlyHint: true`.
    BesideReadOnly,
    /// `readOnlyHint: true`: stays, and lets `NotDestructive` go.
    ReadOnly,
    /// Any other value of one of the four hints: stays.
    Other,
}

struct Walk<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    how: Compaction,
    edits: Vec<(Range<usize>, String)>,
    /// A keyword of the schema being walked whose meaning depends on the
    /// dialect (reset at each root).
    draft_only: bool,
    has_ref: bool,
    /// The root's definitions walked so far, and the references seen.
    defs: Vec<Def>,
    refs: Vec<Ref>,
    /// The definition being walked (an index into `defs`).
    in_def: Option<usize>,
    /// A reference or identifier the walk cannot resolve (an `$id`, an
    /// anchor, a pointer with escapes): every definition stays.
    unresolved: bool,
}

/// One entry of the root's `$defs` / `definitions`.
struct Def {
    keyword: &'static str,
    name: String,
    member: Member,
    /// The edits made inside it, which go if it goes.
    edits: Range<usize>,
    /// Index of the definitions map (the map's other entries share it).
    map: usize,
}

/// A `$ref` to a definition: from the definition it sits in (`None`:
/// outside any), to `keyword`/`name`.
struct Ref {
    from: Option<usize>,
    keyword: &'static str,
    name: String,
}

/// One member of the object being walked: from its key's first byte to
/// its value's last.
struct Member {
    span: Range<usize>,
    drop: bool,
}

impl<'a> Walk<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        self.i = crate::json::lex::skip_ws(self.b, self.i);
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string literal: its span, and whether it holds an escape.
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        let start = self.i;
        self.expect(b'"')?;
        let mut escaped = false;
        loop {
            let rest = self.b.get(self.i..)?;
            let n = memchr::memchr2(b'"', b'\\', rest)?;
            self.i += n + 1;
            if rest.get(n) == Some(&b'\\') {
                escaped = true;
                self.i += 1;
            } else {
                return Some((start..self.i, escaped));
            }
        }
    }

    /// A key, decoded.
    fn key(&mut self) -> Option<Cow<'a, str>> {
        let (span, escaped) = self.string()?;
        let literal = self.text.get(span)?;
        if escaped {
            serde_json::from_str::<String>(literal).ok().map(Cow::Owned)
        } else {
            literal.get(1..literal.len() - 1).map(Cow::Borrowed)
        }
    }

    /// A value in `ctx`.
    fn value(&mut self, ctx: Ctx, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match (self.peek()?, ctx) {
            (b'{', Ctx::Tool | Ctx::Schema(..) | Ctx::Map(_) | Ctx::Annotations) => {
                self.object(ctx, depth)
            }
            (b'[', Ctx::List(side)) => self.array(Ctx::Schema(side, false), depth),
            (b'{', _) => self.object(Ctx::Opaque, depth),
            (b'[', _) => self.array(Ctx::Opaque, depth),
            (b'"', _) => self.string().map(|_| ()),
            _ => {
                // A number or a literal: up to the next delimiter.
                let rest = self.b.get(self.i..)?;
                let n = rest
                    .iter()
                    .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\t' | b'\r'))
                    .unwrap_or(rest.len());
                (n > 0).then(|| self.i += n)
            }
        }
    }

    fn array(&mut self, item: Ctx, depth: usize) -> Option<()> {
        self.expect(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            self.value(item, depth + 1)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, ctx: Ctx, depth: usize) -> Option<()> {
        let root = matches!(ctx, Ctx::Schema(_, true));
        if root {
            self.draft_only = false;
            self.has_ref = false;
            self.defs.clear();
            self.refs.clear();
            self.in_def = None;
            self.unresolved = false;
        }
        self.expect(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        let mut members = Vec::new();
        let mut dialect = None;
        let mut hints: Vec<(usize, u8, Hint)> = Vec::new();
        // A tool's `name` and `title` values (each member's index and the
        // value's span), every one seen.
        let mut names: Vec<Range<usize>> = Vec::new();
        let mut titles: Vec<(usize, Range<usize>)> = Vec::new();
        loop {
            self.ws();
            let start = self.i;
            let key = self.key()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let value = self.i;
            let act = self.act(ctx, &key);
            let drop = match act {
                Act::Keep(Ctx::Defs(side)) => {
                    let keyword = if key == "$defs" {
                        "$defs"
                    } else {
                        "definitions"
                    };
                    self.definitions(side, keyword, members.len(), depth + 1)?;
                    false
                }
                Act::Keep(child) => {
                    self.value(child, depth + 1)?;
                    false
                }
                Act::Drop => {
                    self.value(Ctx::Opaque, depth + 1)?;
                    true
                }
                Act::Describe => {
                    self.value(Ctx::Opaque, depth + 1)?;
                    self.describe(value..self.i);
                    false
                }
                Act::Dialect(ignores_ref_siblings) => {
                    self.value(Ctx::Opaque, depth + 1)?;
                    dialect = Some((members.len(), ignores_ref_siblings));
                    false
                }
                Act::Hint(which, hint) => {
                    self.value(Ctx::Opaque, depth + 1)?;
                    hints.push((members.len(), which, hint));
                    false
                }
                Act::Name => {
                    self.value(Ctx::Opaque, depth + 1)?;
                    names.push(value..self.i);
                    false
                }
                Act::Title => {
                    self.value(Ctx::Opaque, depth + 1)?;
                    titles.push((members.len(), value..self.i));
                    false
                }
            };
            members.push(Member {
                span: start..self.i,
                drop,
            });
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        if let Some((at, ignores_ref_siblings)) = dialect {
            let same = !self.draft_only && (!ignores_ref_siblings || !self.has_ref);
            if let Some(m) = members.get_mut(at) {
                m.drop = same;
            }
        }
        if root {
            self.prune_definitions(&mut members);
        }
        drop_hints(&hints, &mut members);
        if let ([name], [(at, title)]) = (names.as_slice(), titles.as_slice()) {
            if let (Some(name), Some(title)) =
                (self.text.get(name.clone()), self.text.get(title.clone()))
            {
                if let Some(m) = members.get_mut(*at) {
                    m.drop = same_words(name, title);
                }
            }
        }
        self.drop_members(&members);
        Some(())
    }

    /// The root's definitions map, whose member is the root's `at`th:
    /// each entry walked as a schema, kept in [`Self::defs`] until the root
    /// closes and its references are known.
    fn definitions(
        &mut self,
        side: Side,
        keyword: &'static str,
        at: usize,
        depth: usize,
    ) -> Option<()> {
        if depth > MAX_DEPTH || self.peek()? != b'{' {
            return self.value(Ctx::Opaque, depth);
        }
        self.expect(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let start = self.i;
            let name = self.key()?.into_owned();
            self.ws();
            self.expect(b':')?;
            self.ws();
            self.in_def = Some(self.defs.len());
            let first = self.edits.len();
            self.value(Ctx::Schema(side, false), depth + 1)?;
            self.in_def = None;
            self.defs.push(Def {
                keyword,
                name,
                member: Member {
                    span: start..self.i,
                    drop: false,
                },
                edits: first..self.edits.len(),
                map: at,
            });
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Notes the `$ref` whose value is here: a pointer to one of the
    /// root's definitions (JSON Schema 2020-12 Core §8.2.3.1, a JSON
    /// Pointer fragment, RFC 6901), the root itself, or something this
    /// walk does not resolve.
    fn reference(&mut self) {
        let rest = self.b.get(self.i..).unwrap_or(&[]);
        let target = rest
            .get(1..)
            .and_then(|r| memchr::memchr2(b'"', b'\\', r).map(|n| (r, n)))
            .filter(|(r, n)| r.get(*n) == Some(&b'"'))
            .and_then(|(r, n)| std::str::from_utf8(r.get(..n)?).ok());
        let Some(target) = target else {
            self.unresolved = true;
            return;
        };
        if target == "#" {
            return;
        }
        let found = [("#/$defs/", "$defs"), ("#/definitions/", "definitions")]
            .into_iter()
            .find_map(|(prefix, keyword)| Some((keyword, target.strip_prefix(prefix)?)));
        match found {
            Some((keyword, path)) if !path.contains(['~', '%']) => {
                let name = path.split('/').next().unwrap_or(path).to_string();
                self.refs.push(Ref {
                    from: self.in_def,
                    keyword,
                    name,
                });
            }
            _ => self.unresolved = true,
        }
    }

    /// At the root's end: the definitions no reference reaches (from
    /// outside the definitions, then from each definition reached) leave,
    /// and a definitions map left empty leaves with them.
    fn prune_definitions(&mut self, root: &mut [Member]) {
        if self.defs.is_empty() || self.unresolved {
            return;
        }
        // Linear: each definition found by name once, each reference
        // followed once (from its definition's list).
        let by_name: std::collections::HashMap<(&str, &str), usize> = self
            .defs
            .iter()
            .enumerate()
            .map(|(i, d)| ((d.keyword, d.name.as_str()), i))
            .collect();
        let mut from: Vec<Vec<usize>> = vec![Vec::new(); self.defs.len() + 1];
        for r in &self.refs {
            let Some(&target) = by_name.get(&(r.keyword, r.name.as_str())) else {
                // A reference to a definition the root does not have.
                return;
            };
            let at = r.from.map_or(0, |d| d + 1);
            if let Some(list) = from.get_mut(at) {
                list.push(target);
            }
        }
        let mut reached = vec![false; self.defs.len()];
        let mut queue: Vec<usize> = vec![0];
        while let Some(at) = queue.pop() {
            for &t in from.get(at).into_iter().flatten() {
                if let Some(seen) = reached.get_mut(t) {
                    if !*seen {
                        *seen = true;
                        queue.push(t + 1);
                    }
                }
            }
        }
        let defs = std::mem::take(&mut self.defs);
        // What was changed inside a definition that goes goes with it.
        let mut inside = vec![false; self.edits.len()];
        for (d, _) in defs.iter().zip(&reached).filter(|(_, seen)| !**seen) {
            for flag in inside.get_mut(d.edits.clone()).into_iter().flatten() {
                *flag = true;
            }
        }
        let mut n = 0;
        self.edits.retain(|_| {
            n += 1;
            !inside.get(n - 1).copied().unwrap_or(false)
        });
        let mut maps: Vec<usize> = defs.iter().map(|d| d.map).collect();
        maps.dedup();
        for map in maps {
            let mut entries: Vec<Member> = Vec::new();
            let mut any = false;
            for (d, seen) in defs.iter().zip(&reached).filter(|(d, _)| d.map == map) {
                any |= *seen;
                entries.push(Member {
                    span: d.member.span.clone(),
                    drop: !*seen,
                });
            }
            if any {
                self.drop_members(&entries);
            } else if let Some(m) = root.get_mut(map) {
                m.drop = true;
            }
        }
    }

    /// What becomes of the member `key` of an object in `ctx`, at this
    /// walk's level; notes the keywords that tie a schema to its dialect.
    fn act(&mut self, ctx: Ctx, key: &str) -> Act {
        let level = self.how.level;
        match ctx {
            Ctx::Tool => match key {
                "description" if level >= Level::Medium => Act::Describe,
                "execution" if self.at(br#"{"taskSupport":"forbidden"}"#) => Act::Drop,
                "annotations" if level >= Level::Medium => Act::Keep(Ctx::Annotations),
                "name" => Act::Name,
                "title" if level >= Level::Medium => Act::Title,
                "inputSchema" => Act::Keep(Ctx::Schema(Side::Input, true)),
                "outputSchema" if level >= Level::Medium => {
                    Act::Keep(Ctx::Schema(Side::Output, true))
                }
                _ => Act::Keep(Ctx::Opaque),
            },
            Ctx::Annotations => match key {
                "readOnlyHint" | "idempotentHint" | "destructiveHint" | "openWorldHint" => {
                    let which = match key {
                        "readOnlyHint" => 0,
                        "idempotentHint" => 1,
                        "destructiveHint" => 2,
                        _ => 3,
                    };
                    let hint = match (key, self.at(b"false"), self.at(b"true")) {
                        ("readOnlyHint", _, true) => Hint::ReadOnly,
                        ("destructiveHint", true, _) | ("idempotentHint", _, true) => {
                            Hint::BesideReadOnly
                        }
                        ("readOnlyHint" | "idempotentHint", true, _) => Hint::FalseByDefault,
                        _ => Hint::Other,
                    };
                    Act::Hint(which, hint)
                }
                _ => Act::Keep(Ctx::Opaque),
            },
            Ctx::Map(side) | Ctx::Defs(side) => Act::Keep(Ctx::Schema(side, false)),
            Ctx::List(_) | Ctx::Opaque => Act::Keep(Ctx::Opaque),
            Ctx::Schema(side, root) => {
                match key {
                    "additionalItems" | "dependencies" | "$recursiveRef" | "$recursiveAnchor" => {
                        self.draft_only = true
                    }
                    "items" if self.peek() == Some(b'[') => self.draft_only = true,
                    "$ref" => {
                        self.has_ref = true;
                        self.reference();
                    }
                    "$id" | "id" | "$anchor" | "$dynamicAnchor" | "$dynamicRef" => {
                        self.unresolved = true
                    }
                    _ => {}
                }
                let annotation = matches!(key, "title" | "examples" | "$comment")
                    || (key == "description" && level >= Level::Medium);
                match (side, key) {
                    (Side::Input, _) if annotation => Act::Drop,
                    (Side::Input, "default") => Act::Drop,
                    (Side::Input, "additionalProperties") if self.at(b"false") => Act::Drop,
                    (Side::Input, "properties") if self.at(b"{}") => Act::Drop,
                    (_, "$schema") if root => match self.dialect() {
                        Some(ignores) => Act::Dialect(ignores),
                        None => Act::Keep(Ctx::Opaque),
                    },
                    (Side::Output, "title" | "examples" | "$comment" | "description") => Act::Drop,
                    (_, "$defs" | "definitions") if root => Act::Keep(Ctx::Defs(side)),
                    (
                        _,
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" | "dependencies",
                    ) => Act::Keep(Ctx::Map(side)),
                    (_, "allOf" | "anyOf" | "oneOf" | "prefixItems" | "items") => {
                        // `items` holds a schema (2020-12) or an array of
                        // them (draft-07): both are walked as schemas.
                        if self.peek() == Some(b'[') {
                            Act::Keep(Ctx::List(side))
                        } else {
                            Act::Keep(Ctx::Schema(side, false))
                        }
                    }
                    (
                        _,
                        "additionalProperties"
                        | "additionalItems"
                        | "contains"
                        | "propertyNames"
                        | "not"
                        | "if"
                        | "then"
                        | "else"
                        | "unevaluatedItems"
                        | "unevaluatedProperties"
                        | "contentSchema",
                    ) => Act::Keep(Ctx::Schema(side, false)),
                    _ => Act::Keep(Ctx::Opaque),
                }
            }
        }
    }

    /// The value here is written exactly `text` (and ends there).
    fn at(&self, text: &[u8]) -> bool {
        self.b.get(self.i..self.i + text.len()) == Some(text)
            && !self
                .b
                .get(self.i + text.len())
                .is_some_and(|c| c.is_ascii_alphanumeric())
    }

    /// The `$schema` value here names a dialect whose keywords this walk
    /// knows (`Some(true)`: one that ignores `$ref`'s siblings).
    fn dialect(&self) -> Option<bool> {
        let rest = self.b.get(self.i..)?;
        let end = memchr::memchr(b'"', rest.get(1..)?)? + 2;
        let uri = std::str::from_utf8(rest.get(..end)?).ok()?;
        let uri = uri.trim_matches('"').trim_end_matches('#');
        let uri = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        match uri {
            "json-schema.org/draft-07/schema" | "json-schema.org/draft-06/schema" => Some(true),
            "json-schema.org/draft/2019-09/schema" | "json-schema.org/draft/2020-12/schema" => {
                Some(false)
            }
            _ => None,
        }
    }

    /// Shortens the tool description whose literal is at `span`.
    fn describe(&mut self, span: Range<usize>) {
        let Some(literal) = self.text.get(span.clone()) else {
            return;
        };
        let Ok(text) = serde_json::from_str::<Cow<'_, str>>(literal) else {
            return;
        };
        let first = sentence::first_sentence(&text);
        let short: Cow<'_, str> = if self.how.level >= Level::High {
            Cow::Owned(sentence::cut_bytes(first, self.how.max_description_bytes))
        } else {
            Cow::Borrowed(first)
        };
        if short.is_empty() || short.len() == text.len() {
            return;
        }
        let mut out = String::with_capacity(short.len() + 2);
        write_literal(&mut out, &short);
        self.edits.push((span, out));
    }

    /// Deletes the dropped members with their commas: a run of dropped
    /// members at the start up to the first kept one's key, each later
    /// one from the end of the member before it.
    fn drop_members(&mut self, members: &[Member]) {
        let first_kept = members.iter().position(|m| !m.drop);
        for (n, m) in members.iter().enumerate() {
            if !m.drop {
                continue;
            }
            let span = match first_kept {
                None => {
                    // Every member goes: the object becomes `{}`.
                    if n > 0 {
                        continue;
                    }
                    let end = members.last().map_or(m.span.end, |l| l.span.end);
                    m.span.start..end
                }
                Some(k) if n < k => {
                    if n > 0 {
                        continue;
                    }
                    let end = members.get(k).map_or(m.span.end, |kept| kept.span.start);
                    m.span.start..end
                }
                Some(_) => {
                    let start = members.get(n - 1).map_or(m.span.start, |p| p.span.end);
                    start..m.span.end
                }
            };
            self.edits.push((span, String::new()));
        }
    }
}

/// The two JSON string literals say the same words: their letters and
/// digits alike, ASCII case aside (`create_entities`, `"Create Entities"`). A
/// client shows a tool's name where it has no title (MCP 2025-06-18
/// `BaseMetadata.title`), so such a title tells a reader nothing more.
fn same_words(name: &str, title: &str) -> bool {
    let (Ok(name), Ok(title)) = (
        serde_json::from_str::<Cow<'_, str>>(name),
        serde_json::from_str::<Cow<'_, str>>(title),
    ) else {
        return false;
    };
    // ASCII case only: Unicode's case tables would cost the module tens of
    // kilobytes, and a title that differs from its name beyond ASCII case
    // only stays.
    let words = |s: &str| {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || !c.is_ascii())
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    !title.trim().is_empty() && words(&name) == words(&title)
}

/// Marks the annotation hints that go (see the module's notes): none when
/// a hint is named twice, since JSON leaves which one counts to the reader
/// (RFC 8259 §4) and dropping one could change what another reader sees.
fn drop_hints(hints: &[(usize, u8, Hint)], members: &mut [Member]) {
    let mut seen = [false; 4];
    for (_, which, _) in hints {
        match seen.get_mut(usize::from(*which)) {
            Some(s) if !*s => *s = true,
            _ => return,
        }
    }
    let read_only = hints.iter().any(|(_, _, h)| *h == Hint::ReadOnly);
    for (at, _, hint) in hints {
        let goes = match hint {
            Hint::FalseByDefault => true,
            Hint::BesideReadOnly => read_only,
            Hint::ReadOnly | Hint::Other => false,
        };
        if let Some(m) = members.get_mut(*at) {
            m.drop = goes;
        }
    }
}

#[cfg(test)]
mod tests;
