//! A work budget for HTML → Markdown (issue 13): the conversion runs only
//! on markup the parser and the converter can handle in time linear in its
//! size; anything else passes the clean stage unchanged.
//!
//! html5ever implements the WHATWG tree-construction algorithms as written,
//! and several of them are superlinear on hostile markup (servo/html5ever
//! #289, #788):
//! - "has an element in scope" and "generate implied end tags" walk the
//!   stack of open elements for most tokens, so nesting `n` elements deep
//!   costs `n²` (`<div>`, `<rt>`, `<ul><li>` repeated: seconds at 200 KB);
//! - the list of active formatting elements is searched for every
//!   formatting tag (Noah's Ark clause: an attribute-by-attribute comparison
//!   with every entry), and the adoption agency algorithm walks both lists
//!   for every misnested end tag;
//! - the tokenizer checks each attribute's name against every earlier one
//!   of its tag (`n²` for one tag of `n` attributes), and a repeated
//!   `<html>`/`<body>` start tag merges its attributes into the root one by
//!   one.
//!
//! mdka adds its own: a table becomes a grid of rows × widest row, with a
//! spanning cell's content repeated in every cell it covers (`colspan` is
//! not clamped), and every Markdown line inside nested lists or quotes
//! repeats the whole prefix of its containers.
//!
//! Rather than re-implement the parser's rules in a pre-scan (which gets
//! foreign content, raw text, quoted `<`/`>` and misnesting wrong, each gap
//! a way to hide nesting), the guard runs the parser itself: html5ever
//! builds scraper's tree (the one mdka builds) through a sink that counts
//! the parser's work, fed [`FEED_BYTES`] at a time, and stops as soon as
//! - an element would sit deeper than [`MAX_DEPTH`] (browsers stop nesting
//!   at 512 too), or
//! - the work passes [`WORK_PER_BYTE`] units per input byte (plus
//!   [`WORK_BASE`]).
//!
//! The units: every call the tree builder makes to look at a node
//! (`elem_name`, `same_node`: the steps of its stack and list walks), every
//! node created, attribute copied, child moved and ancestor the depth check
//! visits; for each formatting element, its attributes times the formatting
//! elements around it (the Noah's Ark comparisons, which call nothing);
//! and, since the tokenizer's duplicate-attribute check calls nothing
//! either, for every fed piece its possible attribute starts times those
//! since the parser last did anything (an attribute list can only grow
//! while the parser is silent, inside one tag). html5ever's work between
//! two checks is bounded by one piece, so the guard stops within a
//! constant of the budget.
//!
//! When the parse stays within budget, the tree is checked for mdka's
//! costs: the Markdown it would write — every line's container prefix, every
//! table grid cell and every repeated spanning cell — must stay within
//! [`OUTPUT_PER_BYTE`] bytes per input byte. Then mdka parses the text again
//! (the same parse, whose work is now known) and converts it.
//!
//! Everything here is counted, never timed: the verdict is a function of
//! the text alone, the same on every host (wasm has no cheap clock).

use std::borrow::Cow;
use std::cell::{Cell, Ref};

use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{local_name, ns, Attribute, QualName};
use scraper::{Html, HtmlTreeSink, Node};

/// Deepest element nesting converted (Chromium's and WebKit's parsers
/// stop nesting at 512 as well).
pub(crate) const MAX_DEPTH: usize = 512;

/// Parser work allowed per byte of input (units in the module docs).
/// Ordinary pages need 1–7: over 3,855 HTML files installed on the build
/// machine (the rustdoc, mdBook, Node.js, valgrind and libxslt manuals,
/// measured once with [`measure`] and no limits) the median was 1.9 and the
/// most 6.8 units per byte; the hostile shapes of the adversarial benchmark
/// need hundreds to hundreds of thousands.
pub(crate) const WORK_PER_BYTE: u64 = 24;

/// Work allowed whatever the size, so that tiny fragments never trip it.
pub(crate) const WORK_BASE: u64 = 1 << 16;

/// Markdown bytes (estimated from the tree) allowed per byte of input. The
/// same pages: median 0.26, most 2.2.
pub(crate) const OUTPUT_PER_BYTE: u64 = 8;

/// Markdown allowed whatever the size.
pub(crate) const OUTPUT_BASE: u64 = 1 << 16;

/// Input fed to the parser between two checks of the budget.
pub(crate) const FEED_BYTES: usize = 64;

/// A prefix wider than any container writes (`> `, `- `, `1234567. `,
/// plus the indentation of the content column).
const PREFIX_WIDTH: u64 = 12;

/// Why a text is not converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An element would nest deeper than [`MAX_DEPTH`].
    TooDeep,
    /// The parse would cost more than the work budget.
    ParserWork,
    /// The Markdown would be larger than the output budget.
    OutputSize,
}

/// Whether converting `text` stays within the budgets.
pub(crate) fn check(text: &str) -> Result<(), Refusal> {
    let len = text.len() as u64;
    let limits = Limits {
        work: WORK_BASE.saturating_add(WORK_PER_BYTE.saturating_mul(len)),
        output: OUTPUT_BASE.saturating_add(OUTPUT_PER_BYTE.saturating_mul(len)),
    };
    measure(text, limits).map(|_| ())
}

/// Budgets in absolute units.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub(crate) work: u64,
    pub(crate) output: u64,
}

/// What a text cost, when it stayed within the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Usage {
    /// Parser work (units in the module docs).
    pub(crate) work: u64,
    /// Estimated Markdown bytes.
    pub(crate) output: u64,
}

/// Parses `text` under `limits`; its cost, or why it went over.
pub(crate) fn measure(text: &str, limits: Limits) -> Result<Usage, Refusal> {
    let meter = Meter {
        inner: HtmlTreeSink::new(Html::new_document()),
        work: Cell::new(0),
        active: Cell::new(false),
        too_deep: Cell::new(false),
    };
    // The options scraper's `Html::parse_document` (mdka's parse) uses.
    let mut parser = html5ever::parse_document(meter, Default::default());
    let mut silence = Silence::default();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + FEED_BYTES).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let piece = text.get(at..end).unwrap_or_default();
        parser.process(StrTendril::from_slice(piece));
        let meter = &parser.tokenizer.sink.sink;
        let starts = attribute_starts(text, at, end);
        let pending = silence.after(meter.active.replace(false), starts);
        meter.charge(starts.saturating_mul(pending));
        meter.verdict(limits.work)?;
        at = end;
    }
    let meter = parser.finish();
    meter.verdict(limits.work)?;
    let work = meter.work.get();
    let html = meter.inner.0.into_inner();
    let output = markdown_estimate(&html, limits.output);
    if output > limits.output {
        return Err(Refusal::OutputSize);
    }
    Ok(Usage { work, output })
}

/// Possible attribute starts in `text[from..to]`: a byte after ASCII
/// whitespace, `/` or a quote that is none of those nor `>` (WHATWG HTML
/// §13.2.5.32–.42: an attribute name starts after whitespace, after `/` in
/// the self-closing-start-tag state, or after a quoted value). Every
/// attribute of a tag starts at one; most of them are word starts in text.
fn attribute_starts(text: &str, from: usize, to: usize) -> u64 {
    let b = text.as_bytes();
    let separator = |c: u8| c.is_ascii_whitespace() || matches!(c, b'/' | b'"' | b'\'');
    let mut count = 0u64;
    let mut prev = from.checked_sub(1).and_then(|i| b.get(i).copied());
    for &c in b.get(from..to).unwrap_or_default() {
        if prev.is_some_and(separator) && !separator(c) && c != b'>' {
            count += 1;
        }
        prev = Some(c);
    }
    count
}

/// Attribute starts fed since the parser last acted, so the most a tag in
/// progress can hold. A piece in which the parser acted finished a token,
/// so a tag in progress began in it at the earliest; the piece before it is
/// counted too, for a token the parser finished only on seeing the next
/// byte.
#[derive(Default)]
struct Silence {
    /// Starts in the last piece in which the parser acted, and since.
    since_active: u64,
    /// Starts in the piece before that one.
    before: u64,
    /// Starts in the previous piece.
    previous: u64,
}

impl Silence {
    /// Records a piece and returns the starts a tag in progress may hold.
    fn after(&mut self, active: bool, starts: u64) -> u64 {
        if active {
            self.before = self.previous;
            self.since_active = starts;
        } else {
            self.since_active = self.since_active.saturating_add(starts);
        }
        self.previous = starts;
        self.since_active.saturating_add(self.before)
    }
}

/// HTML formatting elements (WHATWG HTML §13.2.4.3), the ones the list of
/// active formatting elements holds.
fn is_formatting(name: &QualName) -> bool {
    name.ns == ns!(html)
        && matches!(
            name.local,
            local_name!("a")
                | local_name!("b")
                | local_name!("big")
                | local_name!("code")
                | local_name!("em")
                | local_name!("font")
                | local_name!("i")
                | local_name!("nobr")
                | local_name!("s")
                | local_name!("small")
                | local_name!("strike")
                | local_name!("strong")
                | local_name!("tt")
                | local_name!("u")
        )
}

/// scraper's tree sink, counting the parser's work. Every call goes to the
/// inner sink unchanged, so the parse (and the tree) is exactly mdka's.
struct Meter {
    inner: HtmlTreeSink,
    work: Cell<u64>,
    /// The tree builder acted (a token was finished) since the last check.
    active: Cell<bool>,
    too_deep: Cell<bool>,
}

impl Meter {
    fn verdict(&self, work: u64) -> Result<(), Refusal> {
        if self.too_deep.get() {
            Err(Refusal::TooDeep)
        } else if self.work.get() > work {
            Err(Refusal::ParserWork)
        } else {
            Ok(())
        }
    }

    fn charge(&self, units: u64) {
        self.work.set(self.work.get().saturating_add(units));
    }

    fn act(&self, units: u64) {
        self.active.set(true);
        self.charge(units);
    }

    /// Charges the depth check of a node about to go under `parent`: the
    /// ancestors visited, and for a formatting element its attributes times
    /// the formatting elements of the same name among them (Noah's Ark).
    fn placed(&self, parent: &NodeId, child: &NodeId) {
        let html = self.inner.0.borrow();
        let Some(parent) = html.tree.get(*parent) else {
            return;
        };
        let formatting = html
            .tree
            .get(*child)
            .and_then(|c| c.value().as_element())
            .filter(|e| is_formatting(&e.name));
        let mut depth = 0usize;
        let mut same = 0u64;
        for node in std::iter::once(parent)
            .chain(parent.ancestors())
            .take(MAX_DEPTH + 1)
        {
            depth += 1;
            if let (Some(f), Some(e)) = (formatting, node.value().as_element()) {
                if e.name == f.name {
                    same += 1;
                }
            }
        }
        let attrs = formatting.map_or(0, |f| f.attrs.len() as u64);
        self.charge(depth as u64 + same.saturating_mul(attrs.saturating_add(1)));
        // `depth` counts the parent and its ancestors up to the document
        // node: the new node's depth below the document.
        if depth > MAX_DEPTH {
            self.too_deep.set(true);
        }
    }

    fn children(&self, node: &NodeId) -> u64 {
        let html = self.inner.0.borrow();
        html.tree
            .get(*node)
            .map_or(0, |n| n.children().count() as u64)
    }

    fn attrs(&self, node: &NodeId) -> u64 {
        let html = self.inner.0.borrow();
        html.tree
            .get(*node)
            .and_then(|n| n.value().as_element())
            .map_or(0, |e| e.attrs.len() as u64)
    }

    fn has_parent(&self, node: &NodeId) -> bool {
        let html = self.inner.0.borrow();
        html.tree.get(*node).is_some_and(|n| n.parent().is_some())
    }
}

impl TreeSink for Meter {
    type Handle = NodeId;
    type Output = Self;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Self {
        self
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        // Not an action: the tokenizer reports errors from inside a tag.
        self.inner.parse_error(msg);
    }

    fn get_document(&self) -> NodeId {
        self.act(1);
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.act(1);
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.act(1 + attrs.len() as u64);
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.act(1);
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.act(1);
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.act(1);
        if let NodeOrText::AppendNode(node) = &child {
            self.placed(parent, node);
        }
        self.inner.append(parent, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        // scraper's own version calls its `append*` directly; this one goes
        // through the metered ones.
        self.act(1);
        if self.has_parent(element) {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.act(1);
        self.inner
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn mark_script_already_started(&self, node: &NodeId) {
        self.act(1);
        self.inner.mark_script_already_started(node);
    }

    fn pop(&self, node: &NodeId) {
        self.act(1);
        self.inner.pop(node);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.act(1);
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.act(1);
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.act(1);
        self.inner.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        self.act(1);
        if let NodeOrText::AppendNode(node) = &new_node {
            let parent = {
                let html = self.inner.0.borrow();
                html.tree
                    .get(*sibling)
                    .and_then(|s| s.parent())
                    .map(|p| p.id())
            };
            if let Some(parent) = parent {
                self.placed(&parent, node);
            }
        }
        self.inner.append_before_sibling(sibling, new_node);
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        // scraper inserts each into a sorted vector: a shift of the ones
        // already there.
        let n = attrs.len() as u64;
        self.act(n.saturating_mul(self.attrs(target).saturating_add(1)));
        self.inner.add_attrs_if_missing(target, attrs);
    }

    fn associate_with_form(
        &self,
        target: &NodeId,
        form: &NodeId,
        nodes: (&NodeId, Option<&NodeId>),
    ) {
        self.act(1);
        self.inner.associate_with_form(target, form, nodes);
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.act(1);
        self.inner.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.act(1 + self.children(node));
        self.inner.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        self.act(1);
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        // Not an action: called for error tokens too.
        self.inner.set_current_line(line_number);
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &NodeId) -> bool {
        self.act(1);
        self.inner.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(
        &self,
        location: &NodeId,
        template: &NodeId,
        attrs: &[Attribute],
    ) -> bool {
        self.act(1 + attrs.len() as u64);
        self.inner
            .attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &NodeId) {
        self.act(1);
        self.inner
            .maybe_clone_an_option_into_selectedcontent(option);
    }
}

/// An upper estimate of the Markdown mdka writes for `html`, counting up to
/// a little past `limit`: every text byte and every element once, every
/// line (a text's line breaks, each element) once more with the prefix of
/// the lists and quotes around it, and every table as the grid mdka fills
/// (see [`table_cost`]).
fn markdown_estimate(html: &Html, limit: u64) -> u64 {
    let mut total = 0u64;
    // Lists and quotes open around the current node.
    let mut containers = 0u64;
    for edge in html.tree.root().traverse() {
        match edge {
            ego_tree::iter::Edge::Open(node) => {
                let prefix = containers.saturating_mul(PREFIX_WIDTH);
                match node.value() {
                    Node::Text(t) => {
                        let lines = 1 + t.text.bytes().filter(|&b| b == b'\n').count() as u64;
                        total = total
                            .saturating_add(t.text.len() as u64)
                            .saturating_add(lines.saturating_mul(prefix));
                    }
                    Node::Element(e) => {
                        total = total.saturating_add(1 + prefix);
                        if is_container(e.name()) {
                            containers += 1;
                        }
                        if e.name() == "table" {
                            total = total.saturating_add(table_cost(node, limit));
                        }
                    }
                    _ => total = total.saturating_add(1),
                }
            }
            ego_tree::iter::Edge::Close(node) => {
                if node
                    .value()
                    .as_element()
                    .is_some_and(|e| is_container(e.name()))
                {
                    containers = containers.saturating_sub(1);
                }
            }
        }
        if total > limit {
            break;
        }
    }
    total
}

/// Elements whose lines mdka writes behind a prefix (list items, quotes).
fn is_container(name: &str) -> bool {
    matches!(name, "li" | "blockquote" | "dd")
}

/// What mdka's GFM grid for `table` costs beyond its cells written once
/// (`mdka::table::analyze_one`, `resolve_grid`): a slot per row and column
/// of the widest row, and a spanning cell's content again for every slot
/// it covers. The rows and cells are found the way mdka finds them; spans
/// are read the way mdka reads them (`usize`, 0 or unreadable as 1).
fn table_cost(table: ego_tree::NodeRef<'_, Node>, limit: u64) -> u64 {
    let rows = table_rows(table);
    let mut cost = 0u64;
    // Which row frees each column again (mdka's `occupied`), capped at the
    // limit: a wider grid is over budget whatever its content.
    let mut occupied: Vec<u64> = Vec::new();
    let mut width = 0u64;
    let row_count = rows.len() as u64;
    for (r, row) in rows.iter().enumerate() {
        let r = r as u64;
        let mut col = 0usize;
        for cell in row.children() {
            let Some(e) = cell.value().as_element() else {
                continue;
            };
            if !matches!(e.name(), "td" | "th") {
                continue;
            }
            while occupied.get(col).is_some_and(|&free| free > r) {
                col += 1;
            }
            let colspan = span(e.attr("colspan"));
            let rowspan = span(e.attr("rowspan")).min(row_count.saturating_sub(r));
            let end = (col as u64).saturating_add(colspan);
            if end > limit {
                return u64::MAX;
            }
            let end = end as usize;
            if occupied.len() < end {
                occupied.resize(end, 0);
            }
            for slot in occupied.iter_mut().skip(col).take(end - col) {
                *slot = r.saturating_add(rowspan);
            }
            let covered = colspan.saturating_mul(rowspan);
            if covered > 1 {
                let content = cell.descendants().count() as u64
                    + cell
                        .descendants()
                        .filter_map(|d| d.value().as_text())
                        .map(|t| t.text.len() as u64)
                        .sum::<u64>();
                cost = cost.saturating_add((covered - 1).saturating_mul(content));
            }
            col = end;
            if cost > limit {
                return cost;
            }
        }
        width = width.max(col as u64).max(occupied.len() as u64);
    }
    // Each slot is at least `| ` and ` |` … written once per row.
    cost.saturating_add(
        row_count
            .saturating_add(1)
            .saturating_mul(width)
            .saturating_mul(4),
    )
}

/// A `colspan`/`rowspan` value as mdka reads it.
fn span(value: Option<&str>) -> u64 {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .map_or(1, |n| n as u64)
}

/// Every `<tr>` of `table`, not entering nested tables (mdka's
/// `collect_rows`), without recursion.
fn table_rows(table: ego_tree::NodeRef<'_, Node>) -> Vec<ego_tree::NodeRef<'_, Node>> {
    let mut rows = Vec::new();
    let mut stack: Vec<ego_tree::NodeRef<'_, Node>> = table.children().rev().collect();
    while let Some(node) = stack.pop() {
        let Some(e) = node.value().as_element() else {
            continue;
        };
        match e.name() {
            "tr" => rows.push(node),
            "table" => {}
            _ => stack.extend(node.children().rev()),
        }
    }
    rows
}

#[cfg(test)]
mod tests;
