//! The walk from a parsed line to its invocations.

use crate::effects::{CODE_VARIABLES, effects_of, reads_program_from_stdin};
use crate::flags::split_args;
use crate::limits::{
    MAX_INPUT_BYTES, MAX_INVOCATIONS, MAX_NESTING, MAX_PAREN_NESTING, MAX_SCRIPT_DEPTH,
    nesting_bound, paren_bound,
};
use crate::paths::normalise_path;
use crate::word::{self, Field, Substitution};
use crate::wrappers::{Inner, SHELLS, unwrap};
use brush_parser::ast;
use nightwatch_core::{Effects, Invocation, Remote};
use std::collections::HashMap;

/// Stack kept free before recursing; below it, the walk continues on a fresh heap segment.
const RED_ZONE: usize = 256 * 1024;
/// Size of each fresh stack segment: enough for brush-parser at [`MAX_NESTING`].
const STACK_SEGMENT: usize = 8 * 1024 * 1024;

/// Analyses `text` as a script at re-parse `depth`.
pub fn analyse_script(text: &str, depth: usize) -> Vec<Invocation> {
    let mut walker = Walker::default();
    walker.script(
        text,
        &Frame {
            depth,
            ..Frame::default()
        },
        Stdin::Terminal,
    );
    walker.out
}

/// Where a command's standard input comes from, as far as the text tells.
#[derive(Clone, Debug)]
enum Stdin {
    /// Whatever the caller's was: a terminal or the agent's empty input.
    Terminal,
    /// Text known from the line (`echo ... |`, a literal here-document or here-string).
    Literal(String),
    /// Produced at runtime by something that talked to the network.
    Network,
    /// Produced at runtime (a file, a decoder, an expanding here-document).
    Unknown,
}

/// What a pipeline stage hands the next one.
#[derive(Default)]
struct StageOutput {
    literal_text: Option<String>,
    network: bool,
}

/// The context commands run in.
#[derive(Clone, Debug, Default)]
struct Frame {
    via: Vec<String>,
    remote: Option<Remote>,
    depth: usize,
}

impl Frame {
    fn inside(&self, label: &str, remote: Option<&Remote>) -> Frame {
        let mut via = self.via.clone();
        via.push(label.to_owned());
        Frame {
            via,
            remote: remote.cloned().or_else(|| self.remote.clone()),
            depth: self.depth,
        }
    }

    fn deeper(&self) -> Frame {
        Frame {
            depth: self.depth + 1,
            ..self.clone()
        }
    }
}

#[derive(Default)]
struct Walker {
    out: Vec<Invocation>,
    /// The working directory after the `cd`s seen so far, when the text tells it. Relative
    /// paths in effects are resolved against it, so `cd /etc && cat shadow` reads /etc/shadow.
    cwd: Option<String>,
    functions: HashMap<String, ast::FunctionBody>,
    calling: Vec<String>,
    exhausted: bool,
}

impl Walker {
    fn script(&mut self, text: &str, frame: &Frame, stdin: Stdin) {
        if let Err(reason) = check_limits(text, frame.depth) {
            self.push_opaque(frame, vec![], reason, Effects::default());
            return;
        }
        match parse(text) {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.compound_list(list, frame, &stdin);
                }
            }
            Err(reason) => self.push_opaque(frame, vec![], reason, Effects::default()),
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList, frame: &Frame, stdin: &Stdin) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, frame, stdin);
            for next in &and_or.additional {
                let (ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline)) = next;
                self.pipeline(pipeline, frame, stdin);
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, frame: &Frame, stdin: &Stdin) {
        let mut input = stdin.clone();
        let mut network_upstream = false;
        for command in &pipeline.seq {
            let output = self.command(command, frame, &input);
            network_upstream |= output.network;
            input = match (network_upstream, output.literal_text) {
                (true, _) => Stdin::Network,
                (false, Some(text)) => Stdin::Literal(text),
                (false, None) => Stdin::Unknown,
            };
        }
    }

    fn command(&mut self, command: &ast::Command, frame: &Frame, stdin: &Stdin) -> StageOutput {
        if self.exhausted {
            return StageOutput::default();
        }
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || match command {
            ast::Command::Simple(simple) => self.simple(simple, frame, stdin),
            ast::Command::Compound(compound, redirects) => {
                self.with_redirects(redirects.as_ref(), frame, stdin, |walker, stdin| {
                    walker.compound(compound, frame, stdin)
                })
            }
            ast::Command::Function(definition) => {
                self.functions
                    .insert(definition.fname.value.clone(), definition.body.clone());
                StageOutput::default()
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.with_redirects(redirects.as_ref(), frame, stdin, |walker, _| {
                    walker.extended_test(&test.expr, frame);
                    StageOutput::default()
                })
            }
        })
    }

    /// Runs `body` with a compound command's redirections applied to everything it runs.
    fn with_redirects(
        &mut self,
        redirects: Option<&ast::RedirectList>,
        frame: &Frame,
        stdin: &Stdin,
        body: impl FnOnce(&mut Self, &Stdin) -> StageOutput,
    ) -> StageOutput {
        let mut effects = Effects::default();
        let mut found = Vec::new();
        let mut own_stdin = None;
        for redirect in redirects.map(|r| r.0.as_slice()).unwrap_or(&[]) {
            self.redirect(redirect, frame, &mut effects, &mut found, &mut own_stdin);
        }
        self.substitutions(found, frame);
        let start = self.out.len();
        let output = body(self, own_stdin.as_ref().unwrap_or(stdin));
        self.spread_effects(start, &effects, frame);
        output
    }

    /// Adds a redirection's effects to every invocation from `start` on, or records them on their
    /// own when nothing ran (`{ :; } > x` still truncates x).
    fn spread_effects(&mut self, start: usize, effects: &Effects, frame: &Frame) {
        if effects.reads.is_empty() && effects.writes.is_empty() {
            return;
        }
        if self.out.len() == start {
            self.push(Invocation {
                via: frame.via.clone(),
                remote: frame.remote.clone(),
                effects: effects.clone(),
                ..Invocation::default()
            });
            return;
        }
        for invocation in &mut self.out[start..] {
            invocation
                .effects
                .reads
                .extend(effects.reads.iter().cloned());
            invocation
                .effects
                .writes
                .extend(effects.writes.iter().cloned());
        }
    }

    fn compound(
        &mut self,
        compound: &ast::CompoundCommand,
        frame: &Frame,
        stdin: &Stdin,
    ) -> StageOutput {
        match compound {
            ast::CompoundCommand::Arithmetic(arithmetic) => {
                self.expanded_text(&arithmetic.expr.value, frame);
                // brush-parser reads `( ( rm x ) )` as `(( rm x ))`; bash runs the subshells.
                // What is not arithmetic is judged as the commands it would be.
                if brush_parser::arithmetic::parse(&arithmetic.expr.value).is_err() {
                    self.script(
                        &format!("( {} )", arithmetic.expr.value),
                        &frame.deeper(),
                        stdin.clone(),
                    );
                }
            }
            ast::CompoundCommand::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.expanded_text(&expr.value, frame);
                }
                self.compound_list(&clause.body.list, frame, stdin);
            }
            ast::CompoundCommand::BraceGroup(group) => {
                self.compound_list(&group.list, frame, stdin)
            }
            ast::CompoundCommand::Subshell(subshell) => {
                self.compound_list(&subshell.list, frame, stdin)
            }
            ast::CompoundCommand::ForClause(clause) => {
                let mut found = Vec::new();
                for value in clause.values.iter().flatten() {
                    word::resolve(&value.value, &mut found);
                }
                self.substitutions(found, frame);
                self.compound_list(&clause.body.list, frame, stdin);
            }
            ast::CompoundCommand::CaseClause(clause) => {
                let mut found = Vec::new();
                word::resolve(&clause.value.value, &mut found);
                for case in &clause.cases {
                    for pattern in &case.patterns {
                        word::resolve(&pattern.value, &mut found);
                    }
                }
                self.substitutions(found, frame);
                for case in &clause.cases {
                    if let Some(list) = &case.cmd {
                        self.compound_list(list, frame, stdin);
                    }
                }
            }
            ast::CompoundCommand::IfClause(clause) => {
                self.compound_list(&clause.condition, frame, stdin);
                self.compound_list(&clause.then, frame, stdin);
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.compound_list(condition, frame, stdin);
                    }
                    self.compound_list(&branch.body, frame, stdin);
                }
            }
            ast::CompoundCommand::WhileClause(clause)
            | ast::CompoundCommand::UntilClause(clause) => {
                self.compound_list(&clause.0, frame, stdin);
                self.compound_list(&clause.1.list, frame, stdin);
            }
            ast::CompoundCommand::Coprocess(coprocess) => {
                return self.command(&coprocess.body, frame, stdin);
            }
        }
        StageOutput::default()
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, frame: &Frame) {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || match expr {
            ast::ExtendedTestExpr::And(left, right) | ast::ExtendedTestExpr::Or(left, right) => {
                self.extended_test(left, frame);
                self.extended_test(right, frame);
            }
            ast::ExtendedTestExpr::Not(inner) | ast::ExtendedTestExpr::Parenthesized(inner) => {
                self.extended_test(inner, frame)
            }
            ast::ExtendedTestExpr::UnaryTest(_, word) => self.expanded_text(&word.value, frame),
            ast::ExtendedTestExpr::BinaryTest(_, left, right) => {
                self.expanded_text(&left.value, frame);
                self.expanded_text(&right.value, frame);
            }
        })
    }

    /// Judges the substitutions inside text that the shell expands.
    fn expanded_text(&mut self, text: &str, frame: &Frame) {
        let mut found = Vec::new();
        word::resolve(text, &mut found);
        self.substitutions(found, frame);
    }

    fn substitutions(&mut self, found: Vec<Substitution>, frame: &Frame) {
        for substitution in found {
            self.script(&substitution.script, &frame.deeper(), Stdin::Terminal);
        }
    }

    fn redirect(
        &mut self,
        redirect: &ast::IoRedirect,
        frame: &Frame,
        effects: &mut Effects,
        found: &mut Vec<Substitution>,
        stdin: &mut Option<Stdin>,
    ) {
        match redirect {
            ast::IoRedirect::File(fd, kind, target) => {
                let path = match target {
                    ast::IoFileRedirectTarget::Filename(word) => word::resolve(&word.value, found)
                        .into_iter()
                        .next()
                        .map(|f| f.text),
                    ast::IoFileRedirectTarget::Duplicate(word) => {
                        let text = word::resolve(&word.value, found)
                            .into_iter()
                            .next()
                            .map(|f| f.text);
                        text.filter(|t| !t.bytes().all(|b| b.is_ascii_digit() || b == b'-'))
                    }
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.compound_list(&subshell.list, frame, &Stdin::Unknown);
                        None
                    }
                    ast::IoFileRedirectTarget::Fd(_) => None,
                };
                let Some(path) = path else { return };
                match kind {
                    ast::IoFileRedirectKind::Read => {
                        effects.reads.push(normalise_path(&path));
                        if fd.is_none_or(|fd| fd == 0) {
                            *stdin = Some(Stdin::Unknown);
                        }
                    }
                    ast::IoFileRedirectKind::ReadAndWrite => {
                        effects.reads.push(normalise_path(&path));
                        record_write(effects, &path);
                    }
                    ast::IoFileRedirectKind::Write
                    | ast::IoFileRedirectKind::Append
                    | ast::IoFileRedirectKind::Clobber
                    | ast::IoFileRedirectKind::DuplicateOutput => record_write(effects, &path),
                    ast::IoFileRedirectKind::DuplicateInput => {
                        effects.reads.push(normalise_path(&path))
                    }
                }
            }
            ast::IoRedirect::HereDocument(_, heredoc) => {
                let literal = if heredoc.requires_expansion {
                    word::substitutions_in_heredoc(&heredoc.doc.value, found)
                } else {
                    true
                };
                *stdin = Some(if literal {
                    Stdin::Literal(heredoc.doc.value.clone())
                } else {
                    Stdin::Unknown
                });
            }
            ast::IoRedirect::HereString(_, word) => {
                let fields = word::resolve(&word.value, found);
                let text = fields
                    .iter()
                    .map(|f| f.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                *stdin = Some(if fields.iter().all(|f| f.literal) {
                    Stdin::Literal(format!("{text}\n"))
                } else {
                    Stdin::Unknown
                });
            }
            ast::IoRedirect::OutputAndError(word, _) => {
                if let Some(field) = word::resolve(&word.value, found).into_iter().next() {
                    record_write(effects, &field.text);
                }
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, frame: &Frame, stdin: &Stdin) -> StageOutput {
        let mut fields: Vec<Field> = Vec::new();
        let mut found: Vec<Substitution> = Vec::new();
        let mut effects = Effects::default();
        let mut own_stdin: Option<Stdin> = None;
        let mut assigned: Vec<String> = Vec::new();
        let mut network_fed_substitution = false;

        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());
        let suffix = simple.suffix.iter().flat_map(|s| s.0.iter());
        let name = simple
            .word_or_name
            .as_ref()
            .map(|w| ast::CommandPrefixOrSuffixItem::Word(w.clone()));
        let mut seen_command_word = false;
        for item in prefix.chain(name.iter()).chain(suffix) {
            match item {
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                    self.redirect(redirect, frame, &mut effects, &mut found, &mut own_stdin)
                }
                ast::CommandPrefixOrSuffixItem::Word(word) => {
                    seen_command_word = true;
                    fields.extend(word::resolve(&word.value, &mut found));
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                    if seen_command_word {
                        // `export X=$(...)`, `declare -x Y=...`: an argument like any other.
                        fields.extend(word::resolve(&word.value, &mut found));
                        continue;
                    }
                    let (ast::AssignmentName::VariableName(name)
                    | ast::AssignmentName::ArrayElementName(name, _)) = &assignment.name;
                    assigned.push(name.clone());
                    match &assignment.value {
                        ast::AssignmentValue::Scalar(value) => {
                            word::resolve(&value.value, &mut found);
                        }
                        ast::AssignmentValue::Array(values) => {
                            for (key, value) in values {
                                if let Some(key) = key {
                                    word::resolve(&key.value, &mut found);
                                }
                                word::resolve(&value.value, &mut found);
                            }
                        }
                    }
                }
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, subshell) => {
                    let start = self.out.len();
                    self.compound_list(&subshell.list, &frame.deeper(), &Stdin::Unknown);
                    network_fed_substitution |= self.out[start..].iter().any(|i| i.effects.network);
                    let sigil = match kind {
                        ast::ProcessSubstitutionKind::Read => "<",
                        ast::ProcessSubstitutionKind::Write => ">",
                    };
                    fields.push(Field {
                        text: format!("{sigil}(...)"),
                        literal: false,
                    });
                }
            }
        }
        let start = self.out.len();
        self.substitutions(found, frame);
        network_fed_substitution |= self.out[start..].iter().any(|i| i.effects.network);

        if assigned
            .iter()
            .any(|name| CODE_VARIABLES.contains(&name.as_str()))
        {
            effects.runs_code = true;
        }
        let stdin = own_stdin.unwrap_or_else(|| stdin.clone());
        if fields.is_empty() {
            if !effects.writes.is_empty() || !effects.reads.is_empty() || effects.runs_code {
                self.push(Invocation {
                    via: frame.via.clone(),
                    remote: frame.remote.clone(),
                    effects,
                    ..Invocation::default()
                });
            }
            return StageOutput::default();
        }
        self.run_fields(fields, frame, &stdin, effects, network_fed_substitution)
    }

    /// Judges one command given as words, then whatever it runs.
    fn run_fields(
        &mut self,
        fields: Vec<Field>,
        frame: &Frame,
        stdin: &Stdin,
        extra: Effects,
        network_fed_substitution: bool,
    ) -> StageOutput {
        if self.exhausted {
            return StageOutput::default();
        }
        let Some(first) = fields.first() else {
            return StageOutput::default();
        };
        let argv: Vec<String> = fields.iter().map(|f| f.text.clone()).collect();
        if !first.literal || first.text.is_empty() || first.text.ends_with('/') {
            let reason = if first.text.is_empty() {
                "the command name is empty".to_owned()
            } else {
                format!("the command name `{}` is only known at runtime", first.text)
            };
            let mut effects = extra;
            effects
                .reads
                .extend(argv.iter().skip(1).map(|a| normalise_path(a)));
            self.push_opaque(frame, argv, reason, effects);
            return StageOutput::default();
        }
        let (path, name) = match first.text.rsplit_once('/') {
            Some((_, name)) => (Some(first.text.clone()), name.to_owned()),
            None => (None, first.text.clone()),
        };

        if path.is_none()
            && !self.calling.contains(&name)
            && let Some(body) = self.functions.get(&name).cloned()
        {
            self.calling.push(name.clone());
            let start = self.out.len();
            let inner = frame.inside(&format!("function {name}"), None);
            self.with_redirects(body.1.as_ref(), &inner, stdin, |walker, stdin| {
                walker.compound(&body.0, &inner, stdin)
            });
            self.spread_effects(start, &extra, frame);
            self.calling.pop();
            return StageOutput::default();
        }

        let mut normalised = argv.clone();
        normalised[0] = name.clone();
        let args = split_args(&name, &normalised[1..]);
        let mut effects = effects_of(&name, &args);
        effects.reads.extend(extra.reads);
        effects.writes.extend(extra.writes);
        effects.runs_code |= extra.runs_code;

        let inners = unwrap(&name, &fields);
        if !inners.is_empty() && name != "find" {
            // A wrapper's words are the wrapped command's: its reads are reported there.
            effects.reads.clear();
        }
        let is_shell = SHELLS.contains(&name.as_str());
        let reads_script_from_stdin = inners
            .iter()
            .any(|inner| matches!(inner, Inner::ScriptFromStdin { .. }))
            || !is_shell && reads_program_from_stdin(&name, &args);
        if reads_script_from_stdin {
            match stdin {
                Stdin::Network => {
                    effects.network = true;
                    effects.runs_code = true;
                }
                Stdin::Unknown => effects.runs_code = true,
                Stdin::Literal(_) | Stdin::Terminal => {}
            }
        }
        for inner in &inners {
            if let Inner::ScriptFile { path, .. } = inner {
                effects.runs_code = true;
                if path.literal {
                    effects.reads.push(normalise_path(&path.text));
                }
                if network_fed_substitution {
                    effects.network = true;
                }
            }
            if let Inner::Script { text, .. } = inner
                && !text.literal
            {
                effects.runs_code = true;
                effects.network |= network_fed_substitution;
            }
        }

        let literal_text = match name.as_str() {
            "echo" | "printf" if fields.iter().all(|f| f.literal) => {
                let words: Vec<&str> = argv[1..]
                    .iter()
                    .map(String::as_str)
                    .skip_while(|w| {
                        name == "echo" && matches!(*w, "-n" | "-e" | "-E" | "-ne" | "-en")
                    })
                    .collect();
                Some(format!("{}\n", words.join(" ")))
            }
            "cat" if argv.len() == 1 => match stdin {
                Stdin::Literal(text) => Some(text.clone()),
                _ => None,
            },
            _ => None,
        };
        let network = effects.network;
        self.push(Invocation {
            argv: normalised,
            path,
            args,
            via: frame.via.clone(),
            remote: frame.remote.clone(),
            opaque: None,
            effects,
        });

        let mut inner_network = false;
        for inner in inners {
            let start = self.out.len();
            match inner {
                Inner::Argv {
                    mut fields,
                    label,
                    remote,
                    args_from_stdin,
                } => {
                    if args_from_stdin && let Stdin::Literal(text) = stdin {
                        fields.extend(text.split_whitespace().map(Field::literal));
                    }
                    let inner_frame = frame.inside(&label, remote.as_ref());
                    let inner_stdin = if args_from_stdin {
                        Stdin::Terminal
                    } else {
                        stdin.clone()
                    };
                    self.run_fields(
                        fields,
                        &inner_frame,
                        &inner_stdin,
                        Effects::default(),
                        false,
                    );
                }
                Inner::Script {
                    text,
                    label,
                    remote,
                } => {
                    let inner_frame = frame.inside(&label, remote.as_ref());
                    if text.literal {
                        self.script(&text.text, &inner_frame.deeper(), stdin.clone());
                    } else {
                        let reason =
                            format!("`{label}` runs a script built at runtime: {}", text.text);
                        let effects = Effects {
                            runs_code: true,
                            network: network_fed_substitution,
                            ..Effects::default()
                        };
                        self.push_opaque(&inner_frame, vec![text.text], reason, effects);
                    }
                }
                Inner::ScriptFromStdin { label } => {
                    let inner_frame = frame.inside(&format!("{label} <stdin>"), None);
                    match stdin {
                        Stdin::Literal(text) => {
                            self.script(text, &inner_frame.deeper(), Stdin::Terminal)
                        }
                        Stdin::Network => {
                            let effects = Effects {
                                network: true,
                                runs_code: true,
                                ..Effects::default()
                            };
                            let reason = format!("`{label}` runs a script piped from the network");
                            self.push_opaque(&inner_frame, vec![], reason, effects);
                        }
                        Stdin::Unknown => {
                            let effects = Effects {
                                runs_code: true,
                                ..Effects::default()
                            };
                            let reason =
                                format!("`{label}` runs a script that is only known at runtime");
                            self.push_opaque(&inner_frame, vec![], reason, effects);
                        }
                        Stdin::Terminal => {}
                    }
                }
                Inner::ScriptFile { .. } => {}
            }
            inner_network |= self.out[start..].iter().any(|i| i.effects.network);
        }
        StageOutput {
            literal_text,
            network: network || inner_network,
        }
    }

    fn push_opaque(&mut self, frame: &Frame, argv: Vec<String>, reason: String, effects: Effects) {
        let name = argv.first().cloned();
        self.push(Invocation {
            args: argv
                .iter()
                .skip(1)
                .map(|a| nightwatch_core::Arg::Positional(a.clone()))
                .collect(),
            argv,
            path: name.filter(|n| n.contains('/')),
            via: frame.via.clone(),
            remote: frame.remote.clone(),
            opaque: Some(reason),
            effects,
        });
    }

    fn push(&mut self, mut invocation: Invocation) {
        if self.exhausted {
            return;
        }
        if let Some(cwd) = &self.cwd {
            let effects = &mut invocation.effects;
            for path in effects
                .reads
                .iter_mut()
                .chain(&mut effects.writes)
                .chain(&mut effects.deletes)
            {
                if is_relative(path) {
                    *path = normalise_path(&format!("{cwd}/{path}"));
                }
            }
        }
        if invocation.name() == "cd" && invocation.remote.is_none() {
            self.cwd = next_directory(self.cwd.as_deref(), &invocation);
        }
        if self.out.len() >= MAX_INVOCATIONS {
            self.exhausted = true;
            self.out.push(Invocation {
                opaque: Some(format!(
                    "the line runs more than {MAX_INVOCATIONS} commands"
                )),
                ..Invocation::default()
            });
            return;
        }
        self.out.push(invocation);
    }
}

fn is_relative(path: &str) -> bool {
    !(path.starts_with('/') || path.starts_with('~') || path.starts_with('$'))
}

/// Where `cd` leaves the shell, when its text says: `None` when it cannot be told.
fn next_directory(cwd: Option<&str>, cd: &Invocation) -> Option<String> {
    let target = cd.positionals().next();
    match target {
        None => Some("~".to_owned()),
        Some("-") => None,
        Some(path) if path.contains(['$', '`', '*', '?']) => None,
        Some(path) if !is_relative(path) => Some(normalise_path(path)),
        Some(path) => cwd.map(|cwd| normalise_path(&format!("{cwd}/{path}"))),
    }
}

/// Writes to these are not writes to anything that stays.
fn record_write(effects: &mut Effects, path: &str) {
    let discarded = matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/self/fd/");
    if !discarded {
        effects.writes.push(normalise_path(path));
    }
}

fn check_limits(text: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_SCRIPT_DEPTH {
        return Err(format!("scripts nested more than {MAX_SCRIPT_DEPTH} deep"));
    }
    if text.len() > MAX_INPUT_BYTES {
        return Err(format!(
            "the line is {} bytes, more than the {MAX_INPUT_BYTES} analysed",
            text.len()
        ));
    }
    if text.contains('\0') {
        return Err("the line contains a NUL byte".to_owned());
    }
    // brush-parser 0.4's tokenizer loops, allocating without bound, on a carriage return
    // after `<<` (found by fuzzing). Agents' lines have no business carrying one.
    if text.contains('\r') {
        return Err("the line contains a carriage return".to_owned());
    }
    let parens = paren_bound(text);
    if parens > MAX_PAREN_NESTING {
        return Err(format!(
            "the line nests parentheses {parens} deep, more than the {MAX_PAREN_NESTING} analysed"
        ));
    }
    let nesting = nesting_bound(text);
    if nesting > MAX_NESTING {
        return Err(format!(
            "the line nests {nesting} levels deep, more than the {MAX_NESTING} analysed"
        ));
    }
    Ok(())
}

/// How long a parse that might not finish is given before the line is declared opaque.
const PARSE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// Parses on a stack segment large enough for the nesting limit, and turns a parser panic into
/// an error rather than a crash.
///
/// brush-parser 0.4's tokenizer can loop without bound on malformed here-documents
/// (`$(<(l <<  oc)`, found by fuzzing). Lines with `<<` are therefore parsed on a thread of
/// their own and abandoned at [`PARSE_DEADLINE`]; a process that exits soon after (a hook, a
/// check) takes the thread with it. Other lines, the common case, parse in place.
fn parse(text: &str) -> Result<ast::Program, String> {
    if text.contains("<<") {
        return parse_with_deadline(text.to_owned());
    }
    parse_in_place(text)
}

fn parse_in_place(text: &str) -> Result<ast::Program, String> {
    stacker::maybe_grow(STACK_SEGMENT / 2, STACK_SEGMENT, || {
        let options = word::parser_options();
        std::panic::catch_unwind(|| {
            brush_parser::Parser::new(text.as_bytes(), &options).parse_program()
        })
    })
    .map_err(|_| "the shell parser failed on this line".to_owned())?
    .map_err(|error| format!("does not parse as bash: {error}"))
}

fn parse_with_deadline(text: String) -> Result<ast::Program, String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("nightwatch-parse".into())
        .stack_size(STACK_SEGMENT)
        .spawn(move || {
            let _ = sender.send(parse_in_place(&text));
        });
    if spawned.is_err() {
        return Err("the shell parser could not be started".to_owned());
    }
    receiver.recv_timeout(PARSE_DEADLINE).unwrap_or_else(|_| {
        Err(format!(
            "the shell parser did not finish within {} s",
            PARSE_DEADLINE.as_secs()
        ))
    })
}
