//! Python's `re` (3.11), as far as `state/consumer_group/regex.py` uses it: which patterns `re.compile` accepts,
//! with its error messages (re/_parser.py's parse and the one error re/_compiler.py adds), and `fullmatch`
//! against topic names. The reference stands Python's `re` in for RE2J; the Rust `regex` crate differs from
//! both (nested classes and `&&`, `\<`, `{,n}`, `$` before a final newline, Unicode case folding), so the
//! parser is a port of Python's and the matcher walks its tree, backtracking as Python's sre does.
//!
//! Exact where the coordinator looks: acceptance and the messages of every pattern regex.py's checks let
//! through, and matching of subjects in a topic name's alphabet (ASCII). Not ported, and refused: `\N{name}`
//! (the Unicode name database; Python accepts the names it knows). Where the reference itself fails (a
//! repetition count of 2^32 - 1 or more: OverflowError; both `(?a)` and `(?u)` as global flags: ValueError),
//! this refuses the pattern with Python's message.

use crate::assignors::model::py_repr;

/// re's flags (re/_constants.py's SRE_FLAG_*).
pub mod flag {
    pub const TEMPLATE: u32 = 1;
    pub const IGNORECASE: u32 = 2;
    pub const LOCALE: u32 = 4;
    pub const MULTILINE: u32 = 8;
    pub const DOTALL: u32 = 16;
    pub const UNICODE: u32 = 32;
    pub const VERBOSE: u32 = 64;
    pub const ASCII: u32 = 256;
    pub const TYPE_FLAGS: u32 = ASCII | LOCALE | UNICODE;
    pub const GLOBAL_FLAGS: u32 = TEMPLATE; // and DEBUG, which no inline flag sets

    pub fn of(c: &str) -> Option<u32> {
        Some(match c {
            "i" => IGNORECASE,
            "L" => LOCALE,
            "m" => MULTILINE,
            "s" => DOTALL,
            "x" => VERBOSE,
            "a" => ASCII,
            "t" => TEMPLATE,
            "u" => UNICODE,
            _ => return None,
        })
    }
}

/// Groups nested deeper than this are refused (the parser and the matcher recurse).
const MAX_NESTING: usize = 500;

/// _constants.MAXREPEAT: a repetition count at or above it is an OverflowError.
const MAXREPEAT: u64 = u32::MAX as u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Digit,
    NotDigit,
    Space,
    NotSpace,
    Word,
    NotWord,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetItem {
    Literal(u32),
    Range(u32, u32),
    Category(Category),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Beginning,
    End,
    BeginningString,
    EndString,
    Boundary,
    NonBoundary,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Literal(u32),
    NotLiteral(u32),
    Any,
    In {
        negate: bool,
        items: Vec<SetItem>,
    },
    At(At),
    Branch(Vec<Vec<Node>>),
    /// A group: its number if it captures, the flags it turns on and off.
    Subpattern {
        group: Option<usize>,
        add: u32,
        del: u32,
        body: Vec<Node>,
    },
    /// `lazy`: MIN_REPEAT; `max` u32::MAX is MAXREPEAT (no bound).
    Repeat {
        min: u32,
        max: u32,
        lazy: bool,
        body: Vec<Node>,
    },
    GroupRef(usize),
}

/// re.error: the message, and the position it names (in code points) if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReError {
    pub msg: String,
    pub pos: Option<usize>,
}

/// A compiled pattern: its tree, its global flags and its number of groups.
#[derive(Clone, Debug)]
pub struct Pattern {
    nodes: Vec<Node>,
    flags: u32,
    groups: usize,
}

/// `str(error)` as re.error formats it for `pattern`.
fn error_text(pattern: &[char], e: &ReError) -> String {
    let Some(pos) = e.pos else { return e.msg.clone() };
    let mut msg = format!("{} at position {pos}", e.msg);
    if pattern.contains(&'\n') {
        let before = &pattern[..pos.min(pattern.len())];
        let line = before.iter().filter(|c| **c == '\n').count() + 1;
        let column = pos - before.iter().rposition(|c| *c == '\n').map_or(-1, |i| i as i64) as usize;
        msg = format!("{msg} (line {line}, column {column})");
    }
    msg
}

/// `re.compile(pattern)`: the pattern, or `str(re.error)` (or the OverflowError's / ValueError's message).
pub fn compile(pattern: &str) -> Result<Pattern, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut source = Tokenizer::new(&chars);
    let mut state = State::default();
    let parsed = (|| {
        let p = parse_sub(&mut source, &mut state, false, 0)?;
        // fix_flags: a str pattern is Unicode unless ASCII.
        if state.flags & flag::ASCII == 0 {
            state.flags |= flag::UNICODE;
        } else if state.flags & flag::UNICODE != 0 {
            return Err(Failure::Other("ASCII and UNICODE flags are incompatible".into()));
        }
        if source.next.is_some() {
            return Err(source.error("unbalanced parenthesis", 0));
        }
        if state.flags & flag::TEMPLATE != 0
            && let Some(lazy) = first_repeat(&p)
        {
            let op = if lazy { "MIN_REPEAT" } else { "MAX_REPEAT" };
            return Err(Failure::Re(ReError {
                msg: format!("internal: unsupported template operator {op}"),
                pos: None,
            }));
        }
        Ok(p)
    })();
    match parsed {
        Ok(nodes) => Ok(Pattern { nodes, flags: state.flags, groups: state.groups }),
        Err(Failure::Re(e)) => Err(error_text(&chars, &e)),
        Err(Failure::Other(message)) => Err(message),
    }
}

/// The first repetition in the order re/_compiler.py's `_compile` meets them (a template pattern refuses it).
fn first_repeat(nodes: &[Node]) -> Option<bool> {
    nodes.iter().find_map(|node| match node {
        Node::Repeat { lazy, .. } => Some(*lazy),
        Node::Branch(items) => items.iter().find_map(|item| first_repeat(item)),
        Node::Subpattern { body, .. } => first_repeat(body),
        _ => None,
    })
}

/// A parse failure: re.error, or the OverflowError / ValueError Python raises instead.
enum Failure {
    Re(ReError),
    Other(String),
}

type Parsed<T> = Result<T, Failure>;

#[derive(Default)]
struct State {
    flags: u32,
    groups_open: Vec<bool>,
    groups: usize,
    groupdict: Vec<(String, usize)>,
}

impl State {
    /// State.opengroup, its error's message (the caller gives it a position).
    fn opengroup(&mut self, name: Option<&str>) -> Result<usize, String> {
        if self.groups == 0 {
            self.groups = 1; // group 0 is the whole match
            self.groups_open.push(false);
        }
        let gid = self.groups;
        self.groups += 1;
        self.groups_open.push(true);
        if let Some(name) = name {
            if let Some((_, ogid)) = self.groupdict.iter().find(|(n, _)| n == name) {
                return Err(format!("redefinition of group name {} as group {gid}; was group {ogid}", py_repr(name)));
            }
            self.groupdict.push((name.to_string(), gid));
        }
        Ok(gid)
    }

    fn checkgroup(&self, gid: usize) -> bool {
        gid < self.groups && !self.groups_open[gid]
    }
}

/// re/_parser.py's Tokenizer: `next` is the next character, or a backslash and the character it escapes.
struct Tokenizer<'a> {
    chars: &'a [char],
    index: usize,
    next: Option<String>,
}

impl<'a> Tokenizer<'a> {
    fn new(chars: &'a [char]) -> Self {
        let mut t = Tokenizer { chars, index: 0, next: None };
        t.advance();
        t
    }

    fn advance(&mut self) {
        let Some(&c) = self.chars.get(self.index) else {
            self.next = None;
            return;
        };
        let mut token = c.to_string();
        let mut index = self.index;
        if c == '\\' {
            index += 1;
            // A trailing backslash is refused before parsing (regex.py); it would be a bad escape here.
            if let Some(&escaped) = self.chars.get(index) {
                token.push(escaped);
            }
        }
        self.index = index + 1;
        self.next = Some(token);
    }

    fn next_is(&self, s: &str) -> bool {
        self.next.as_deref() == Some(s)
    }

    fn next_in(&self, set: &str) -> bool {
        self.next.as_deref().is_some_and(|n| n.chars().count() == 1 && set.contains(n))
    }

    fn matches(&mut self, s: &str) -> bool {
        if self.next_is(s) {
            self.advance();
            return true;
        }
        false
    }

    fn get(&mut self) -> Option<String> {
        let this = self.next.take();
        self.advance();
        this
    }

    fn getwhile(&mut self, n: usize, charset: &str) -> String {
        let mut result = String::new();
        for _ in 0..n {
            if !self.next_in(charset) {
                break;
            }
            result.push_str(&self.get().expect("next"));
        }
        result
    }

    fn getuntil(&mut self, terminator: &str, name: &str) -> Parsed<String> {
        let mut result = String::new();
        loop {
            let c = self.get();
            match c {
                None if result.is_empty() => return Err(self.error(&format!("missing {name}"), 0)),
                None => {
                    return Err(self.error(&format!("missing {terminator}, unterminated name"), result.chars().count()));
                }
                Some(c) if c == terminator => {
                    if result.is_empty() {
                        return Err(self.error(&format!("missing {name}"), 1));
                    }
                    return Ok(result);
                }
                Some(c) => result.push_str(&c),
            }
        }
    }

    fn tell(&self) -> usize {
        self.index - self.next.as_ref().map_or(0, |n| n.chars().count())
    }

    fn seek(&mut self, index: usize) {
        self.index = index;
        self.advance();
    }

    fn error(&self, msg: &str, offset: usize) -> Failure {
        Failure::Re(ReError { msg: msg.to_string(), pos: Some(self.tell() - offset) })
    }

    fn checkgroupname(&self, name: &str, offset: usize) -> Parsed<()> {
        if !is_identifier(name) {
            return Err(
                self.error(&format!("bad character in group name {}", py_repr(name)), name.chars().count() + offset)
            );
        }
        Ok(())
    }
}

/// str.isidentifier (XID_Start or `_`, then XID_Continue).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || unicode_ident::is_xid_start(c))
        && chars.all(unicode_ident::is_xid_continue)
}

const DIGITS: &str = "0123456789";
const OCTDIGITS: &str = "01234567";
const HEXDIGITS: &str = "0123456789abcdefABCDEF";
const WHITESPACE: &str = " \t\n\r\u{b}\u{c}";
const SPECIAL_CHARS: &str = ".\\[{()*+?^$|";

fn len(s: &str) -> usize {
    s.chars().count()
}

/// An escape that is one code point (ESCAPES), or None.
fn simple_escape(escape: &str) -> Option<u32> {
    Some(match escape {
        "\\a" => 7,
        "\\b" => 8,
        "\\f" => 12,
        "\\n" => 10,
        "\\r" => 13,
        "\\t" => 9,
        "\\v" => 11,
        "\\\\" => 92,
        _ => return None,
    })
}

/// A class escape (`\d` ...: CATEGORIES' IN entries).
fn category_escape(escape: &str) -> Option<Category> {
    Some(match escape {
        "\\d" => Category::Digit,
        "\\D" => Category::NotDigit,
        "\\s" => Category::Space,
        "\\S" => Category::NotSpace,
        "\\w" => Category::Word,
        "\\W" => Category::NotWord,
        _ => return None,
    })
}

fn at_escape(escape: &str) -> Option<At> {
    Some(match escape {
        "\\A" => At::BeginningString,
        "\\b" => At::Boundary,
        "\\B" => At::NonBoundary,
        "\\Z" => At::EndString,
        _ => return None,
    })
}

/// The escapes both `_escape` and `_class_escape` read the same way (\x, \u, \U, \N, and a non-letter):
/// the code point, or None for the caller's own cases.
fn code_escape(source: &mut Tokenizer, escape: &str) -> Parsed<Option<u32>> {
    let c = escape.chars().nth(1).expect("an escape");
    let digits = match c {
        'x' => 2,
        'u' => 4,
        'U' => 8,
        'N' => {
            if !source.matches("{") {
                return Err(source.error("missing {", 0));
            }
            let name = source.getuntil("}", "character name")?;
            return Err(source.error(
                &format!("\\N{{{name}}}: Unicode character names are not evaluated by the native core"),
                len(&name) + 4,
            ));
        }
        _ => return Ok(None),
    };
    let escape = format!("{escape}{}", source.getwhile(digits, HEXDIGITS));
    if len(&escape) != digits + 2 {
        return Err(source.error(&format!("incomplete escape {escape}"), len(&escape)));
    }
    let code = u32::from_str_radix(&escape[2..], 16).expect("hex digits");
    if code > 0x10FFFF {
        return Err(source.error(&format!("bad escape {escape}"), len(&escape)));
    }
    Ok(Some(code))
}

enum ClassCode {
    Literal(u32),
    Category(Category),
}

/// _class_escape.
fn class_escape(source: &mut Tokenizer, escape: &str) -> Parsed<ClassCode> {
    if let Some(code) = simple_escape(escape) {
        return Ok(ClassCode::Literal(code));
    }
    if let Some(category) = category_escape(escape) {
        return Ok(ClassCode::Category(category));
    }
    if let Some(code) = code_escape(source, escape)? {
        return Ok(ClassCode::Literal(code));
    }
    let c = escape.chars().nth(1).expect("an escape");
    if OCTDIGITS.contains(c) {
        let escape = format!("{escape}{}", source.getwhile(2, OCTDIGITS));
        let code = u32::from_str_radix(&escape[1..], 8).expect("octal digits");
        if code > 0o377 {
            return Err(source.error(&format!("octal escape value {escape} outside of range 0-0o377"), len(&escape)));
        }
        return Ok(ClassCode::Literal(code));
    }
    if !DIGITS.contains(c) && !c.is_ascii_alphabetic() {
        return Ok(ClassCode::Literal(c as u32));
    }
    Err(source.error(&format!("bad escape {escape}"), len(escape)))
}

/// _escape: an escape outside a class. (`\1`..`\9` are refused before parsing: only `\0` is octal here.)
fn escape_code(source: &mut Tokenizer, escape: &str) -> Parsed<Node> {
    if let Some(at) = at_escape(escape) {
        return Ok(Node::At(at));
    }
    if let Some(category) = category_escape(escape) {
        return Ok(Node::In { negate: false, items: vec![SetItem::Category(category)] });
    }
    if let Some(code) = simple_escape(escape) {
        return Ok(Node::Literal(code));
    }
    if let Some(code) = code_escape(source, escape)? {
        return Ok(Node::Literal(code));
    }
    let c = escape.chars().nth(1).expect("an escape");
    if c == '0' {
        let escape = format!("{escape}{}", source.getwhile(2, OCTDIGITS));
        return Ok(Node::Literal(u32::from_str_radix(&escape[1..], 8).expect("octal digits")));
    }
    if !DIGITS.contains(c) && !c.is_ascii_alphabetic() {
        return Ok(Node::Literal(c as u32));
    }
    Err(source.error(&format!("bad escape {escape}"), len(escape)))
}

/// _parse_sub: an alternation. (Python's factoring of a common prefix and of single characters into a set
/// changes nothing a match or an error shows.)
fn parse_sub(source: &mut Tokenizer, state: &mut State, verbose: bool, nested: usize) -> Parsed<Vec<Node>> {
    let mut items = Vec::new();
    let mut verbose = verbose;
    loop {
        items.push(parse(source, state, verbose, nested + 1, nested == 0 && items.is_empty())?);
        if !source.matches("|") {
            break;
        }
        if nested == 0 {
            verbose = state.flags & flag::VERBOSE != 0;
        }
    }
    if items.len() == 1 {
        return Ok(items.pop().expect("one"));
    }
    Ok(vec![Node::Branch(items)])
}

fn is_repeat(node: &Node) -> bool {
    matches!(node, Node::Repeat { .. })
}

/// _parse: a sequence.
fn parse(source: &mut Tokenizer, state: &mut State, verbose: bool, nested: usize, first: bool) -> Parsed<Vec<Node>> {
    let mut verbose = verbose;
    let mut sub: Vec<Node> = Vec::new();
    while let Some(this) = source.next.clone() {
        if this == "|" || this == ")" {
            break;
        }
        source.get();
        if verbose {
            if len(&this) == 1 && WHITESPACE.contains(&this) {
                continue;
            }
            if this == "#" {
                loop {
                    match source.get() {
                        None => break,
                        Some(c) if c == "\n" => break,
                        _ => {}
                    }
                }
                continue;
            }
        }
        if this.starts_with('\\') {
            sub.push(escape_code(source, &this)?);
        } else if !SPECIAL_CHARS.contains(&this) {
            sub.push(Node::Literal(this.chars().next().expect("a char") as u32));
        } else if this == "[" {
            sub.push(parse_class(source)?);
        } else if "*+?{".contains(&this) {
            let here = source.tell();
            let (min, max) = match this.as_str() {
                "?" => (0, 1),
                "*" => (0, MAXREPEAT),
                "+" => (1, MAXREPEAT),
                _ => {
                    if source.next_is("}") {
                        sub.push(Node::Literal('{' as u32));
                        continue;
                    }
                    let mut lo = String::new();
                    let mut hi = String::new();
                    while source.next_in(DIGITS) {
                        lo.push_str(&source.get().expect("digit"));
                    }
                    if source.matches(",") {
                        while source.next_in(DIGITS) {
                            hi.push_str(&source.get().expect("digit"));
                        }
                    } else {
                        hi = lo.clone();
                    }
                    if !source.matches("}") {
                        sub.push(Node::Literal('{' as u32));
                        source.seek(here);
                        continue;
                    }
                    let count = |digits: &str| -> Parsed<u64> {
                        // Python's int() has no bound: anything at or above MAXREPEAT overflows.
                        let n = digits.trim_start_matches('0');
                        match n.parse::<u64>() {
                            Ok(v) if v < MAXREPEAT => Ok(v),
                            _ if n.is_empty() => Ok(0),
                            _ => Err(Failure::Other("the repetition number is too large".into())),
                        }
                    };
                    let min = if lo.is_empty() { 0 } else { count(&lo)? };
                    let mut max = MAXREPEAT;
                    if !hi.is_empty() {
                        max = count(&hi)?;
                        if max < min {
                            return Err(source.error("min repeat greater than max repeat", source.tell() - here));
                        }
                    }
                    (min, max)
                }
            };
            let item = match sub.last() {
                None | Some(Node::At(_)) => {
                    return Err(source.error("nothing to repeat", source.tell() - here + len(&this)));
                }
                Some(last) if is_repeat(last) => {
                    return Err(source.error("multiple repeat", source.tell() - here + len(&this)));
                }
                Some(_) => sub.pop().expect("last"),
            };
            let body = match item {
                Node::Subpattern { group: None, add: 0, del: 0, body } => body,
                item => vec![item],
            };
            if source.matches("?") {
                sub.push(Node::Repeat { min: min as u32, max: max as u32, lazy: true, body });
            } else if source.next_is("+") {
                // regex.py refuses them before parsing (RE2J has none); Python's atomic matching is not ported.
                return Err(Failure::Other("possessive quantifiers are not ported".into()));
            } else {
                sub.push(Node::Repeat { min: min as u32, max: max as u32, lazy: false, body });
            }
        } else if this == "." {
            sub.push(Node::Any);
        } else if this == "(" {
            match parse_group(source, state, verbose, nested, first && sub.is_empty())? {
                Group::Node(node) => sub.push(node),
                Group::GlobalFlags => verbose = state.flags & flag::VERBOSE != 0,
            }
        } else if this == "^" {
            sub.push(Node::At(At::Beginning));
        } else if this == "$" {
            sub.push(Node::At(At::End));
        }
    }
    // Unpack non-capturing groups without flags.
    let mut out = Vec::with_capacity(sub.len());
    for node in sub {
        match node {
            Node::Subpattern { group: None, add: 0, del: 0, body } => out.extend(body),
            node => out.push(node),
        }
    }
    Ok(out)
}

enum Group {
    Node(Node),
    GlobalFlags,
}

/// A `(` (regex.py has refused lookarounds, atomic groups, conditionals, comments and `(?<name>` already).
fn parse_group(source: &mut Tokenizer, state: &mut State, verbose: bool, nested: usize, first: bool) -> Parsed<Group> {
    if nested > MAX_NESTING {
        // Python's parser recurses too, and fails far earlier (RecursionError, which regex.py does not catch).
        return Err(Failure::Other("maximum recursion depth exceeded".into()));
    }
    let start = source.tell() - 1;
    let mut capture = true;
    let mut name = None;
    let (mut add, mut del) = (0, 0);
    if source.matches("?") {
        let Some(c) = source.get() else { return Err(source.error("unexpected end of pattern", 0)) };
        if c == "P" {
            if source.matches("<") {
                let n = source.getuntil(">", "group name")?;
                source.checkgroupname(&n, 1)?;
                name = Some(n);
            } else if source.matches("=") {
                let n = source.getuntil(")", "group name")?;
                source.checkgroupname(&n, 1)?;
                let Some(&(_, gid)) = state.groupdict.iter().find(|(g, _)| *g == n) else {
                    return Err(source.error(&format!("unknown group name {}", py_repr(&n)), len(&n) + 1));
                };
                if !state.checkgroup(gid) {
                    return Err(source.error("cannot refer to an open group", len(&n) + 1));
                }
                return Ok(Group::Node(Node::GroupRef(gid)));
            } else {
                let Some(c) = source.get() else { return Err(source.error("unexpected end of pattern", 0)) };
                return Err(source.error(&format!("unknown extension ?P{c}"), len(&c) + 2));
            }
        } else if c == ":" {
            capture = false;
        } else if flag::of(&c).is_some() || c == "-" {
            match parse_flags(source, state, c)? {
                None => {
                    if !first {
                        return Err(
                            source.error("global flags not at the start of the expression", source.tell() - start)
                        );
                    }
                    return Ok(Group::GlobalFlags);
                }
                Some((a, d)) => {
                    (add, del) = (a, d);
                    capture = false;
                }
            }
        } else {
            return Err(source.error(&format!("unknown extension ?{c}"), len(&c) + 1));
        }
    }
    let group = if capture {
        match state.opengroup(name.as_deref()) {
            Ok(gid) => Some(gid),
            Err(msg) => return Err(source.error(&msg, name.as_deref().map_or(0, len) + 1)),
        }
    } else {
        None
    };
    let sub_verbose = (verbose || add & flag::VERBOSE != 0) && del & flag::VERBOSE == 0;
    let body = parse_sub(source, state, sub_verbose, nested + 1)?;
    if !source.matches(")") {
        return Err(source.error("missing ), unterminated subpattern", source.tell() - start));
    }
    if let Some(gid) = group {
        state.groups_open[gid] = false;
    }
    Ok(Group::Node(Node::Subpattern { group, add, del, body }))
}

fn is_alpha(s: &str) -> bool {
    !s.is_empty() && s.chars().all(char::is_alphabetic)
}

/// _parse_flags: None for global flags (`(?i)`), else the flags a scoped group turns on and off.
fn parse_flags(source: &mut Tokenizer, state: &mut State, first: String) -> Parsed<Option<(u32, u32)>> {
    let mut c = first;
    let (mut add, mut del) = (0u32, 0u32);
    if c != "-" {
        loop {
            let f = flag::of(&c).expect("a flag");
            if c == "L" {
                return Err(source.error("bad inline flags: cannot use 'L' flag with a str pattern", 0));
            }
            add |= f;
            if f & flag::TYPE_FLAGS != 0 && add & flag::TYPE_FLAGS != f {
                return Err(source.error("bad inline flags: flags 'a', 'u' and 'L' are incompatible", 0));
            }
            let Some(next) = source.get() else { return Err(source.error("missing -, : or )", 0)) };
            c = next;
            if c == ")" || c == "-" || c == ":" {
                break;
            }
            if flag::of(&c).is_none() {
                let msg = if is_alpha(&c) { "unknown flag" } else { "missing -, : or )" };
                return Err(source.error(msg, len(&c)));
            }
        }
    }
    if c == ")" {
        state.flags |= add;
        return Ok(None);
    }
    if add & flag::GLOBAL_FLAGS != 0 {
        return Err(source.error("bad inline flags: cannot turn on global flag", 1));
    }
    if c == "-" {
        let Some(next) = source.get() else { return Err(source.error("missing flag", 0)) };
        c = next;
        if flag::of(&c).is_none() {
            let msg = if is_alpha(&c) { "unknown flag" } else { "missing flag" };
            return Err(source.error(msg, len(&c)));
        }
        loop {
            let f = flag::of(&c).expect("a flag");
            if f & flag::TYPE_FLAGS != 0 {
                return Err(source.error("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", 0));
            }
            del |= f;
            let Some(next) = source.get() else { return Err(source.error("missing :", 0)) };
            c = next;
            if c == ":" {
                break;
            }
            if flag::of(&c).is_none() {
                let msg = if is_alpha(&c) { "unknown flag" } else { "missing :" };
                return Err(source.error(msg, len(&c)));
            }
        }
    }
    if del & flag::GLOBAL_FLAGS != 0 {
        return Err(source.error("bad inline flags: cannot turn off global flag", 1));
    }
    if add & del != 0 {
        return Err(source.error("bad inline flags: flag turned on and off", 1));
    }
    Ok(Some((add, del)))
}

fn first_code(token: &str) -> u32 {
    token.chars().next().expect("a char") as u32
}

/// A `[` set.
fn parse_class(source: &mut Tokenizer) -> Parsed<Node> {
    let here = source.tell() - 1;
    let mut set: Vec<SetItem> = Vec::new();
    let negate = source.matches("^");
    loop {
        let Some(this) = source.get() else {
            return Err(source.error("unterminated character set", source.tell() - here));
        };
        if this == "]" && !set.is_empty() {
            break;
        }
        let code1 =
            if this.starts_with('\\') { class_escape(source, &this)? } else { ClassCode::Literal(first_code(&this)) };
        if source.matches("-") {
            let Some(that) = source.get() else {
                return Err(source.error("unterminated character set", source.tell() - here));
            };
            if that == "]" {
                set.push(item(code1));
                set.push(SetItem::Literal('-' as u32));
                break;
            }
            let code2 = if that.starts_with('\\') {
                class_escape(source, &that)?
            } else {
                ClassCode::Literal(first_code(&that))
            };
            let bad = || source.error(&format!("bad character range {this}-{that}"), len(&this) + 1 + len(&that));
            let (ClassCode::Literal(lo), ClassCode::Literal(hi)) = (code1, code2) else { return Err(bad()) };
            if hi < lo {
                return Err(bad());
            }
            set.push(SetItem::Range(lo, hi));
        } else {
            set.push(item(code1));
        }
    }
    let mut unique: Vec<SetItem> = Vec::with_capacity(set.len());
    for i in set {
        if !unique.contains(&i) {
            unique.push(i);
        }
    }
    Ok(match (unique.as_slice(), negate) {
        ([SetItem::Literal(c)], false) => Node::Literal(*c),
        ([SetItem::Literal(c)], true) => Node::NotLiteral(*c),
        _ => Node::In { negate, items: unique },
    })
}

fn item(code: ClassCode) -> SetItem {
    match code {
        ClassCode::Literal(c) => SetItem::Literal(c),
        ClassCode::Category(c) => SetItem::Category(c),
    }
}

// ----------------------------------------------------------------------------------------------------------
// Matching (`fullmatch`) of subjects in a topic name's alphabet: sre's rules for ASCII characters.

/// sre's flags combined into a group (_combine_flags).
fn combine(flags: u32, add: u32, del: u32) -> u32 {
    let flags = if add & flag::TYPE_FLAGS != 0 { flags & !flag::TYPE_FLAGS } else { flags };
    (flags | add) & !del
}

/// The pattern characters that match the ASCII character `x` when case is ignored: the ASCII letter in
/// either case and, with Unicode rules, those whose lower case is it (U+0130, U+212A) or whose lower case
/// Python counts as its equivalent (re/_casefix.py: U+0131 for i, U+017F for s).
fn case_variants(x: u32, unicode: bool) -> Vec<u32> {
    let Some(c) = char::from_u32(x).filter(char::is_ascii_alphabetic) else { return vec![x] };
    let lower = c.to_ascii_lowercase();
    let mut out = vec![lower as u32, c.to_ascii_uppercase() as u32];
    if unicode {
        match lower {
            'i' => out.extend([0x130, 0x131]),
            'k' => out.push(0x212A),
            's' => out.push(0x17F),
            _ => {}
        }
    }
    out
}

fn is_word(c: u32) -> bool {
    char::from_u32(c).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn in_category(category: Category, c: u32, unicode: bool) -> bool {
    let ch = char::from_u32(c).unwrap_or('\0');
    // str.isspace counts the ASCII separators U+001C..U+001F too; the ASCII rules do not.
    let space = WHITESPACE.contains(ch) || (unicode && (0x1C..=0x1F).contains(&c));
    match category {
        Category::Digit => ch.is_ascii_digit(),
        Category::NotDigit => !ch.is_ascii_digit(),
        Category::Space => space,
        Category::NotSpace => !space,
        Category::Word => is_word(c),
        Category::NotWord => !is_word(c),
    }
}

fn literal_matches(pattern: u32, x: u32, flags: u32) -> bool {
    if flags & flag::IGNORECASE == 0 {
        return pattern == x;
    }
    case_variants(x, flags & flag::ASCII == 0).contains(&pattern)
}

fn set_matches(negate: bool, items: &[SetItem], x: u32, flags: u32) -> bool {
    let candidates = if flags & flag::IGNORECASE == 0 { vec![x] } else { case_variants(x, flags & flag::ASCII == 0) };
    let unicode = flags & flag::ASCII == 0;
    let hit = items.iter().any(|item| match *item {
        SetItem::Literal(c) => candidates.contains(&c),
        SetItem::Range(lo, hi) => candidates.iter().any(|c| (lo..=hi).contains(c)),
        SetItem::Category(category) => in_category(category, x, unicode),
    });
    hit != negate
}

type Caps = Vec<Option<(usize, usize)>>;

struct Matcher<'a> {
    subject: &'a [u32],
}

impl Pattern {
    /// `re.fullmatch(pattern, subject)` is not None.
    pub fn fullmatch(&self, subject: &str) -> bool {
        let subject: Vec<u32> = subject.chars().map(|c| c as u32).collect();
        let m = Matcher { subject: &subject };
        let mut caps: Caps = vec![None; self.groups.max(1)];
        let end = subject.len();
        m.seq(&self.nodes, self.flags, 0, &mut caps, &mut |pos, _| pos == end)
    }
}

type Cont<'k> = dyn FnMut(usize, &mut Caps) -> bool + 'k;

impl Matcher<'_> {
    fn seq(&self, nodes: &[Node], flags: u32, pos: usize, caps: &mut Caps, k: &mut Cont) -> bool {
        let Some((node, rest)) = nodes.split_first() else { return k(pos, caps) };
        let mut next = |p: usize, c: &mut Caps| self.seq(rest, flags, p, c, k);
        self.node(node, flags, pos, caps, &mut next)
    }

    fn char_at(&self, pos: usize) -> Option<u32> {
        self.subject.get(pos).copied()
    }

    fn node(&self, node: &Node, flags: u32, pos: usize, caps: &mut Caps, k: &mut Cont) -> bool {
        let one = |ok: bool, caps: &mut Caps, k: &mut Cont| ok && k(pos + 1, caps);
        match node {
            Node::Literal(c) => one(self.char_at(pos).is_some_and(|x| literal_matches(*c, x, flags)), caps, k),
            Node::NotLiteral(c) => one(self.char_at(pos).is_some_and(|x| !literal_matches(*c, x, flags)), caps, k),
            Node::Any => one(self.char_at(pos).is_some_and(|x| flags & flag::DOTALL != 0 || x != '\n' as u32), caps, k),
            Node::In { negate, items } => {
                one(self.char_at(pos).is_some_and(|x| set_matches(*negate, items, x, flags)), caps, k)
            }
            Node::At(at) => self.at(*at, flags, pos) && k(pos, caps),
            Node::Branch(items) => items.iter().any(|item| {
                let saved = caps.clone();
                let ok = self.seq(item, flags, pos, caps, k);
                if !ok {
                    *caps = saved;
                }
                ok
            }),
            Node::Subpattern { group, add, del, body } => {
                let inner = combine(flags, *add, *del);
                match group {
                    None => self.seq(body, inner, pos, caps, k),
                    Some(gid) => {
                        let gid = *gid;
                        self.seq(body, inner, pos, caps, &mut |end, c: &mut Caps| {
                            let saved = c[gid];
                            c[gid] = Some((pos, end));
                            let ok = k(end, c);
                            if !ok {
                                c[gid] = saved;
                            }
                            ok
                        })
                    }
                }
            }
            Node::Repeat { min, max, body, .. } => self.repeat(body, flags, *min, *max, 0, pos, caps, k),
            Node::GroupRef(gid) => {
                let Some((start, end)) = caps[*gid] else { return false };
                let n = end - start;
                let ok = pos + n <= self.subject.len()
                    && (0..n).all(|i| {
                        let (a, b) = (self.subject[start + i], self.subject[pos + i]);
                        if flags & flag::IGNORECASE == 0 { a == b } else { literal_matches(a, b, flags) }
                    });
                ok && k(pos + n, caps)
            }
        }
    }

    /// Every way of matching `body` `count`.. times; an iteration that matched nothing ends the loop (sre's
    /// guard against endless empty iterations).
    #[allow(clippy::too_many_arguments)]
    fn repeat(
        &self,
        body: &[Node],
        flags: u32,
        min: u32,
        max: u32,
        count: u32,
        pos: usize,
        caps: &mut Caps,
        k: &mut Cont,
    ) -> bool {
        if count >= min && k(pos, caps) {
            return true;
        }
        if count >= max {
            return false;
        }
        self.seq(body, flags, pos, caps, &mut |end, c: &mut Caps| {
            if end == pos {
                // Once empty, every further iteration can be: the tail was tried at this count already, or
                // is tried at the minimum now.
                return count < min && self.repeat(body, flags, min, max, min, end, c, k);
            }
            self.repeat(body, flags, min, max, count + 1, end, c, k)
        })
    }

    fn at(&self, at: At, flags: u32, pos: usize) -> bool {
        let n = self.subject.len();
        let newline = '\n' as u32;
        match at {
            At::Beginning if flags & flag::MULTILINE != 0 => pos == 0 || self.subject[pos - 1] == newline,
            At::Beginning | At::BeginningString => pos == 0,
            At::End if flags & flag::MULTILINE != 0 => pos == n || self.subject[pos] == newline,
            At::End => pos == n || (pos + 1 == n && self.subject[pos] == newline),
            At::EndString => pos == n,
            At::Boundary | At::NonBoundary => {
                let before = pos > 0 && is_word(self.subject[pos - 1]);
                let after = pos < n && is_word(self.subject[pos]);
                (before != after) == (at == At::Boundary)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, subject: &str) -> bool {
        compile(pattern).expect("compiles").fullmatch(subject)
    }

    #[test]
    fn python_rules_where_the_regex_crate_differs() {
        assert!(matches("[]a]+", "]a")); // a `]` first in a class is a literal
        assert!(matches("x{", "x{") && matches("f{,2}", "ff")); // `{` not a count is a literal; `{,n}` is 0..n
        assert!(matches("(?i)\u{212a}", "k") && !matches("(?a)(?i)\u{212a}", "k")); // KELVIN SIGN folds to k
        assert!(matches("(?i)[\u{130}]", "I")); // U+0130's lower case is i
        assert!(matches("(?P<x>o)(?P=x)", "oo") && !matches("(?P<x>o)(?P=x)", "oO"));
        assert_eq!(compile("a)").unwrap_err(), "unbalanced parenthesis at position 1");
        assert_eq!(compile("a\n(").unwrap_err(), "missing ), unterminated subpattern at position 2 (line 2, column 1)");
        assert_eq!(compile("(?t)a*").unwrap_err(), "internal: unsupported template operator MAX_REPEAT");
    }
}
