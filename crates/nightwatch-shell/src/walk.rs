//! The walk from a parsed line to its invocations.

use crate::effects::{
    CODE_VARIABLES, awk_program, code_paths, effects_of, inline_code, is_interpreter,
    reads_program_from_stdin,
};
use crate::environment::{self, code_reads_env, environment_effects};
use crate::limits::{
    MAX_INPUT_BYTES, MAX_INVOCATIONS, MAX_NESTING, MAX_PAREN_NESTING, MAX_SCRIPT_DEPTH,
    nesting_bound, paren_bound,
};
use crate::network::{host_of, network_effects};
use crate::word::{self, Field, Substitution};
use crate::wrappers::{Inner, SHELLS, unwrap};
use brush_parser::ast;
use nightwatch_core::flags::split_args;
use nightwatch_core::paths::{is_relative, normalise_path};
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
    /// A here-string or here-document that expands these variables: a command that prints
    /// its input reveals them.
    Expanded(Vec<String>),
}

/// What a pipeline stage hands the next one.
#[derive(Default)]
struct StageOutput {
    literal_text: Option<String>,
    network: bool,
    /// The variables printed into the pipe (`echo "$P" | docker login --password-stdin`): the
    /// next command reveals them only if it prints or sends its input.
    names: Vec<String>,
}

/// A `for` loop over at most this many listed values is walked once per value; a longer list
/// leaves its variable unbound.
const MAX_LOOP_VALUES: usize = 8;
/// Most bytes of a `for` loop walked once per value.
const MAX_ITERATED_LOOP: usize = 2048;
/// Most extra walks of loop bodies in one line.
const MAX_LOOP_WALKS: usize = 32;
/// Most variables one variable is recorded to carry; past it, it may carry any (`*`).
const MAX_CARRIED: usize = 32;

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
    /// The value of each enclosing `for` loop's variable in the iteration being walked, when
    /// the text lists them: `for f in ~/.aws/*; do cat "$f"; done` reads `~/.aws/*`.
    loop_values: HashMap<String, Field>,
    /// Extra loop-body walks spent so far, against [`MAX_LOOP_WALKS`].
    loop_walks: usize,
    /// Set while the next simple command is a pipeline stage whose output feeds another.
    stage_piped: bool,
    /// The variables each shell variable was given the value of (`T=$GITHUB_TOKEN`,
    /// `read x <<< "$K"`): revealing it reveals them.
    carried: HashMap<String, Vec<String>>,
    /// Symbolic links the line itself makes (`ln -s ~/.aws/credentials c`), link to target:
    /// a later path through the link also names its target, which no filesystem shows yet
    /// when the line is decided.
    links: Vec<(String, String)>,
}

/// Most links made in one line that are followed; a line making more is hostile.
const MAX_LINKS: usize = 32;

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
        let mut finder: Option<usize> = None;
        for (stage, command) in pipeline.seq.iter().enumerate() {
            let start = self.out.len();
            self.stage_piped = stage + 1 < pipeline.seq.len();
            let output = self.command(command, frame, &input);
            self.stage_piped = false;
            // `find DIR ... | xargs CMD` runs CMD on every file found: DIR's tree is read.
            if let Some(find) = finder
                && stage_command(&self.out, start, &frame.via, "xargs").is_some()
            {
                let roots = self.out[find].effects.reads.clone();
                let searches = &mut self.out[find].effects.searches;
                for root in roots {
                    if !searches.contains(&root) {
                        searches.push(root);
                    }
                }
            }
            finder = stage_command(&self.out, start, &frame.via, "find");
            network_upstream |= output.network;
            input = match (network_upstream, output.literal_text) {
                (true, _) => Stdin::Network,
                (false, Some(text)) => Stdin::Literal(text),
                (false, None) if !output.names.is_empty() => Stdin::Expanded(output.names),
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

    /// Adds a redirection's (or a prefix assignment's) effects to every invocation from `start`
    /// on, or records them on their own when nothing ran (`{ :; } > x` still truncates x).
    fn spread_effects(&mut self, start: usize, effects: &Effects, frame: &Frame) {
        if *effects == Effects::default() {
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
            merge(&mut invocation.effects, effects);
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
                let mut values = Vec::new();
                for value in clause.values.iter().flatten() {
                    values.extend(word::resolve(&value.value, &mut found));
                }
                self.substitutions(found, frame);
                // The body runs once per listed value, seeing it where it expands the
                // variable. Without a list (`for f; do`), with a long one or past the budget,
                // it is walked once with the variable unknown.
                let name = &clause.variable_name;
                let size = clause.loc.end.index.saturating_sub(clause.loc.start.index);
                let iterate = clause.values.is_some()
                    && (1..=MAX_LOOP_VALUES).contains(&values.len())
                    && size <= MAX_ITERATED_LOOP
                    && self.loop_walks + values.len() <= MAX_LOOP_WALKS + 1;
                let outer = self.loop_values.remove(name);
                if iterate {
                    self.loop_walks += values.len() - 1;
                    for value in values {
                        self.loop_values.insert(name.clone(), value);
                        self.compound_list(&clause.body.list, frame, stdin);
                    }
                    self.loop_values.remove(name);
                } else {
                    self.compound_list(&clause.body.list, frame, stdin);
                }
                if let Some(value) = outer {
                    self.loop_values.insert(name.clone(), value);
                }
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

    /// `field` with the values of the loop variables it expands (`"$f"`, `${f}`, `"$d/x"`,
    /// `$a$b`), into `out`.
    fn bind_loop_values(&self, field: Field, out: &mut Vec<Field>) {
        let bindable = !self.loop_values.is_empty()
            && !field.names.is_empty()
            && field.names.iter().all(|n| self.loop_values.contains_key(n))
            // Only a word where nothing else expands (no other variable, no substitution).
            && !field
                .names
                .iter()
                .fold(field.text.clone(), |text, name| substitute(&text, name, ""))
                .contains(['$', '`']);
        if !bindable {
            out.push(field);
            return;
        }
        let mut bound = Field {
            text: field.text.clone(),
            literal: true,
            names: Vec::new(),
            quoted_tilde: false,
        };
        for name in &field.names {
            let Some(value) = self.loop_values.get(name) else {
                continue;
            };
            if [format!("${name}"), format!("${{{name}}}")]
                .iter()
                .any(|lead| bound.text.starts_with(lead.as_str()))
            {
                bound.quoted_tilde = value.quoted_tilde;
            }
            bound.text = substitute(&bound.text, name, &value.text);
            bound.literal &= value.literal;
            add_names(&mut bound.names, &value.names);
        }
        out.push(bound);
    }

    /// Records that `name` now holds the values of `from` (and of what they hold); an
    /// assignment of known text clears it.
    fn carry(&mut self, name: &str, from: Vec<String>) {
        if from.is_empty() {
            if !self.carried.is_empty() {
                self.carried.remove(name);
            }
            return;
        }
        let mut all = Vec::new();
        for source in &from {
            add_names(&mut all, std::slice::from_ref(source));
            if let Some(deeper) = self.carried.get(source) {
                add_names(&mut all, deeper);
            }
            if all.len() > MAX_CARRIED {
                all = vec![environment::ALL.to_owned()];
                break;
            }
        }
        self.carried.insert(name.to_owned(), all);
    }

    /// Adds to `revealed` the variables its variables were given the values of.
    fn reveal_carried(&self, revealed: &mut Vec<String>) {
        if self.carried.is_empty() {
            return;
        }
        let mut more = Vec::new();
        for name in revealed.iter() {
            if let Some(sources) = self.carried.get(name) {
                add_names(&mut more, sources);
            }
        }
        add_names(revealed, &more);
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
                let field = match target {
                    ast::IoFileRedirectTarget::Filename(word) => {
                        word::resolve(&word.value, found).into_iter().next()
                    }
                    ast::IoFileRedirectTarget::Duplicate(word) => word::resolve(&word.value, found)
                        .into_iter()
                        .next()
                        .filter(|f| !f.text.bytes().all(|b| b.is_ascii_digit() || b == b'-')),
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.compound_list(&subshell.list, frame, &Stdin::Unknown);
                        None
                    }
                    ast::IoFileRedirectTarget::Fd(_) => None,
                };
                let Some(field) = field else { return };
                let mut targets = Vec::new();
                self.bind_loop_values(field, &mut targets);
                for target in targets {
                    let path = path_text(&target);
                    redirect_to(*fd, kind, &path, effects, stdin);
                }
            }
            ast::IoRedirect::HereDocument(_, heredoc) => {
                let (literal, names) = if heredoc.requires_expansion {
                    word::substitutions_in_heredoc(&heredoc.doc.value, found)
                } else {
                    (true, Vec::new())
                };
                *stdin = Some(match (literal, names.is_empty()) {
                    (true, _) => Stdin::Literal(heredoc.doc.value.clone()),
                    (false, true) => Stdin::Unknown,
                    (false, false) => Stdin::Expanded(names),
                });
            }
            ast::IoRedirect::HereString(_, word) => {
                let fields = word::resolve(&word.value, found);
                let text = fields
                    .iter()
                    .map(|f| f.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                let mut names: Vec<String> = Vec::new();
                for name in fields.iter().flat_map(|f| &f.names) {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
                *stdin = Some(if fields.iter().all(|f| f.literal) {
                    Stdin::Literal(format!("{text}\n"))
                } else if names.is_empty() {
                    Stdin::Unknown
                } else {
                    Stdin::Expanded(names)
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
        let piped = std::mem::take(&mut self.stage_piped);
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
                    for field in word::resolve(&word.value, &mut found) {
                        self.bind_loop_values(field, &mut fields);
                    }
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                    let (ast::AssignmentName::VariableName(name)
                    | ast::AssignmentName::ArrayElementName(name, _)) = &assignment.name;
                    let mut carried: Vec<String> = Vec::new();
                    if seen_command_word {
                        // `export X=$(...)`, `declare -x Y=...`: an argument like any other.
                        for field in word::resolve(&word.value, &mut found) {
                            add_names(&mut carried, &field.names);
                            fields.push(field);
                        }
                        self.carry(name, carried);
                        continue;
                    }
                    assigned.push(name.clone());
                    match &assignment.value {
                        ast::AssignmentValue::Scalar(value) => {
                            for field in word::resolve(&value.value, &mut found) {
                                add_names(&mut carried, &field.names);
                            }
                        }
                        ast::AssignmentValue::Array(values) => {
                            for (key, value) in values {
                                if let Some(key) = key {
                                    word::resolve(&key.value, &mut found);
                                }
                                for field in word::resolve(&value.value, &mut found) {
                                    add_names(&mut carried, &field.names);
                                }
                            }
                        }
                    }
                    self.carry(name, carried);
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
                        names: Vec::new(),
                        quoted_tilde: false,
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
        // `VAR=x cmd` sets VAR for cmd; a bare `VAR=x` for what follows (exported by `set -a`
        // or an earlier `export VAR`).
        for name in assigned {
            if !effects.sets_env.contains(&name) {
                effects.sets_env.push(name);
            }
        }
        let stdin = own_stdin.unwrap_or_else(|| stdin.clone());
        if fields.is_empty() {
            if effects != Effects::default() {
                self.push(Invocation {
                    via: frame.via.clone(),
                    remote: frame.remote.clone(),
                    effects,
                    ..Invocation::default()
                });
            }
            return StageOutput::default();
        }
        let start = self.out.len();
        let mut output = self.run_fields(fields, frame, &stdin, effects, network_fed_substitution);
        // `echo "$P" | docker login --password-stdin` prints into the pipe, as a here-string
        // would: what the variables reveal is decided by the command that reads them.
        if piped
            && !redirects_stdout(simple)
            && let Some(printer) = self.out.get_mut(start)
            && matches!(printer.name(), "echo" | "printf" | "print")
            && printer.via == frame.via
        {
            output.names = std::mem::take(&mut printer.effects.reveals_env);
        }
        output
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
        let mut effects = if fields.iter().any(|f| f.quoted_tilde) {
            // Paths are judged with a quoted `~` as the file it names here (`rm -rf '~'`).
            let paths: Vec<String> = fields[1..].iter().map(path_text).collect();
            effects_of(&name, &split_args(&name, &paths))
        } else {
            effects_of(&name, &args)
        };
        let inners = unwrap(&name, &fields);
        if !inners.is_empty() && name != "find" {
            // A wrapper's words are the wrapped command's: its reads are reported there.
            effects.reads.clear();
        }
        // The line's own redirections and assignments stay with the wrapper (`timeout 5 cat <
        // key` reads key).
        merge(&mut effects, &extra);
        let is_shell = SHELLS.contains(&name.as_str());
        let reads_program = !is_shell && reads_program_from_stdin(&name, &args);
        let reads_script_from_stdin = reads_program
            || inners
                .iter()
                .any(|inner| matches!(inner, Inner::ScriptFromStdin { .. }));
        if reads_script_from_stdin {
            match stdin {
                Stdin::Network => {
                    effects.network = true;
                    effects.runs_code = true;
                }
                Stdin::Unknown | Stdin::Expanded(_) => effects.runs_code = true,
                // A shell's literal script is judged command by command; another
                // interpreter's is code like `python3 -c` (scanned below).
                Stdin::Literal(_) if reads_program => effects.runs_code = true,
                Stdin::Literal(_) | Stdin::Terminal => {}
            }
        }
        // `python3 <(curl ...)`, `source <(curl ...)`: a program from the network.
        if network_fed_substitution
            && (is_interpreter(&name) || matches!(name.as_str(), "source" | "."))
        {
            effects.network = true;
            effects.runs_code = true;
        }
        // Inline programs, and a program handed to an interpreter as known text on stdin.
        let mut code = inline_code(&name, &args);
        if reads_program && let Stdin::Literal(program) = stdin {
            code.push(program);
        }
        for program in &code {
            code_paths(program, &mut effects.reads);
        }
        if let Some(program) = awk_program(&name, &args) {
            code_reads_env(program, &mut effects.reveals_env);
        }
        let stdin_names = match stdin {
            Stdin::Expanded(names) => names.as_slice(),
            _ => &[],
        };
        environment_effects(&name, &args, &fields, stdin_names, &mut effects);
        for program in &code {
            code_reads_env(program, &mut effects.reveals_env);
        }
        // An inline program or xargs does what it likes with its input, printing included.
        if !code.is_empty() || name == "xargs" {
            add_names(&mut effects.reveals_env, stdin_names);
        }
        // `read x <<< "$K"`, `... | while read x`: x now holds K.
        if name == "read" && !stdin_names.is_empty() {
            let targets: Vec<String> = args
                .iter()
                .filter_map(|a| match a {
                    nightwatch_core::Arg::Positional(p) => Some(p.clone()),
                    nightwatch_core::Arg::Flag { .. } => None,
                })
                .collect();
            for target in targets {
                self.carry(&target, stdin_names.to_vec());
            }
        }
        self.reveal_carried(&mut effects.reveals_env);
        network_effects(&name, &normalised, &args, &code, &mut effects);
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
        // `env -C DIR cmd`, `sudo -D DIR cmd`: the wrapped command runs in DIR.
        let chdir = match name.as_str() {
            "env" => Some("-C"),
            "sudo" => Some("-D"),
            _ => None,
        }
        .and_then(|option| {
            args.iter().find_map(|a| match a {
                nightwatch_core::Arg::Flag {
                    name,
                    value: Some(dir),
                } if name == option => Some(directory(self.cwd.as_deref(), dir)),
                _ => None,
            })
        });
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
                    let outer_cwd = chdir
                        .as_ref()
                        .map(|dir| std::mem::replace(&mut self.cwd, dir.clone()));
                    self.run_fields(
                        fields,
                        &inner_frame,
                        &inner_stdin,
                        Effects::default(),
                        false,
                    );
                    if let Some(outer) = outer_cwd {
                        self.cwd = outer;
                    }
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
                        // The expanded values become code, which may well print them.
                        let effects = Effects {
                            runs_code: true,
                            network: network_fed_substitution,
                            reveals_env: text.names,
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
                        Stdin::Unknown | Stdin::Expanded(_) => {
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
            names: Vec::new(),
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
                .chain(&mut effects.searches)
            {
                if is_relative(path) {
                    *path = normalise_path(&format!("{cwd}/{path}"));
                }
            }
        }
        if !self.links.is_empty() {
            let links = &self.links;
            invocation
                .effects
                .add_other_names(|path| through_links(path, links));
        }
        if invocation.remote.is_none()
            && self.links.len() < MAX_LINKS
            && let Some(link) = symlink_made(&invocation, self.cwd.as_deref())
        {
            self.links.push(link);
        }
        // Any process's environment, read as a file, is the whole environment revealed.
        let effects = &mut invocation.effects;
        if effects.reads.iter().any(|p| is_process_environment(p))
            && !effects.reveals_env.iter().any(|n| n == environment::ALL)
        {
            effects.reveals_env.push(environment::ALL.to_owned());
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

/// The effects of redirecting `fd` to or from `path`.
fn redirect_to(
    fd: Option<ast::IoFd>,
    kind: &ast::IoFileRedirectKind,
    path: &str,
    effects: &mut Effects,
    stdin: &mut Option<Stdin>,
) {
    // bash opens a connection for these; no file is involved.
    if let Some(socket) = path
        .strip_prefix("/dev/tcp/")
        .or_else(|| path.strip_prefix("/dev/udp/"))
    {
        effects.network = true;
        let host = socket.split('/').next().and_then(host_of);
        if let Some(host) = host.filter(|h| !effects.hosts.contains(h)) {
            effects.hosts.push(host);
        }
        if matches!(kind, ast::IoFileRedirectKind::Read) && fd.is_none_or(|fd| fd == 0) {
            *stdin = Some(Stdin::Network);
        }
        return;
    }
    match kind {
        ast::IoFileRedirectKind::Read => {
            effects.reads.push(normalise_path(path));
            if fd.is_none_or(|fd| fd == 0) {
                *stdin = Some(Stdin::Unknown);
            }
        }
        ast::IoFileRedirectKind::ReadAndWrite => {
            effects.reads.push(normalise_path(path));
            record_write(effects, path);
        }
        ast::IoFileRedirectKind::Write
        | ast::IoFileRedirectKind::Append
        | ast::IoFileRedirectKind::Clobber
        | ast::IoFileRedirectKind::DuplicateOutput => record_write(effects, path),
        ast::IoFileRedirectKind::DuplicateInput => effects.reads.push(normalise_path(path)),
    }
}

/// Where a pipeline stage that began at `start` ran `name` itself (not in a substitution or
/// through a wrapper).
fn stage_command(out: &[Invocation], start: usize, via: &[String], name: &str) -> Option<usize> {
    out.get(start..)?
        .iter()
        .position(|i| i.via == via && i.name() == name)
        .map(|at| start + at)
}

/// `text` with every `${name}` and `$name` (not `$names`) replaced by `value`.
fn substitute(text: &str, name: &str, value: &str) -> String {
    let text = text.replace(&format!("${{{name}}}"), value);
    let bare = format!("${name}");
    let mut replaced = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&bare) {
        let after = &rest[at + bare.len()..];
        replaced.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            replaced.push_str(&bare);
        } else {
            replaced.push_str(value);
        }
        rest = after;
    }
    replaced.push_str(rest);
    replaced
}

/// A word as a path: a quoted `~` at its start is a file named `~` here.
fn path_text(field: &Field) -> String {
    if field.quoted_tilde {
        format!("./{}", field.text)
    } else {
        field.text.clone()
    }
}

/// True when a simple command sends its standard output somewhere else than the pipe.
fn redirects_stdout(simple: &ast::SimpleCommand) -> bool {
    let items = simple.prefix.iter().flat_map(|p| p.0.iter());
    let items = items.chain(simple.suffix.iter().flat_map(|s| s.0.iter()));
    items.into_iter().any(|item| match item {
        ast::CommandPrefixOrSuffixItem::IoRedirect(ast::IoRedirect::File(fd, kind, _)) => {
            fd.is_none_or(|fd| fd == 1)
                && matches!(
                    kind,
                    ast::IoFileRedirectKind::Write
                        | ast::IoFileRedirectKind::Append
                        | ast::IoFileRedirectKind::Clobber
                        | ast::IoFileRedirectKind::DuplicateOutput
                        | ast::IoFileRedirectKind::ReadAndWrite
                )
        }
        ast::CommandPrefixOrSuffixItem::IoRedirect(ast::IoRedirect::OutputAndError(..)) => true,
        _ => false,
    })
}

/// Adds each of `names` to `into` that is not there yet.
fn add_names(into: &mut Vec<String>, names: &[String]) {
    for name in names {
        if !into.contains(name) {
            into.push(name.clone());
        }
    }
}

/// `/proc/self/environ`, `/proc/$$/environ`, `/proc/*/environ`, `/proc/1/task/1/environ`.
/// The link and its target when `ln -s TARGET LINK` (or `ln -s TARGET` into the current
/// directory) names both literally; the link's path as effects would write it.
fn symlink_made(invocation: &Invocation, cwd: Option<&str>) -> Option<(String, String)> {
    if invocation.name() != "ln" || !invocation.has_flag("-s") || invocation.is_opaque() {
        return None;
    }
    let positionals: Vec<&str> = invocation.positionals().collect();
    let (target, link) = match positionals.as_slice() {
        [target, link] => (*target, normalise_path(link)),
        [target] => (*target, normalise_path(target.rsplit('/').next()?)),
        _ => return None,
    };
    let unknown = |text: &str| text.contains(['$', '`', '*', '?', '[']);
    if unknown(target) || unknown(&link) {
        return None;
    }
    let link = match cwd {
        Some(cwd) if is_relative(&link) => normalise_path(&format!("{cwd}/{link}")),
        _ => link,
    };
    // A relative target is relative to the link's directory.
    let target = match link.rsplit_once('/') {
        Some((directory, _)) if is_relative(target) => format!("{directory}/{target}"),
        _ => target.to_owned(),
    };
    Some((link, normalise_path(&target)))
}

/// The path through a link's target, for a path that goes through a link the line made.
fn through_links(path: &str, links: &[(String, String)]) -> Vec<String> {
    links
        .iter()
        .filter_map(|(link, target)| {
            let rest = if path == link {
                ""
            } else {
                path.strip_prefix(link.as_str())
                    .filter(|rest| rest.starts_with('/'))?
            };
            Some(normalise_path(&format!("{target}{rest}")))
        })
        .collect()
}

fn is_process_environment(path: &str) -> bool {
    path.starts_with("/proc/") && path.ends_with("/environ")
}

/// Adds `extra` (a redirection's, an assignment's effects) to an invocation's own.
fn merge(effects: &mut Effects, extra: &Effects) {
    effects.reads.extend(extra.reads.iter().cloned());
    effects.writes.extend(extra.writes.iter().cloned());
    effects.deletes.extend(extra.deletes.iter().cloned());
    effects.searches.extend(extra.searches.iter().cloned());
    for (into, from) in [
        (&mut effects.sets_env, &extra.sets_env),
        (&mut effects.reveals_env, &extra.reveals_env),
        (&mut effects.hosts, &extra.hosts),
    ] {
        for item in from {
            if !into.contains(item) {
                into.push(item.clone());
            }
        }
    }
    effects.network |= extra.network;
    effects.privilege |= extra.privilege;
    effects.process_control |= extra.process_control;
    effects.service_control |= extra.service_control;
    effects.runs_code |= extra.runs_code;
}

/// Where `cd` leaves the shell, when its text says: `None` when it cannot be told.
fn next_directory(cwd: Option<&str>, cd: &Invocation) -> Option<String> {
    match cd.positionals().next() {
        None => Some("~".to_owned()),
        Some("-") => None,
        Some(path) => directory(cwd, path),
    }
}

/// The directory `path` names from `cwd`, when the text tells (`$HOME/.aws` is `~/.aws`). A
/// globbed directory stays globbed (`cd ~/.a*` then `cat credentials` may read
/// `~/.aws/credentials`, and policy judges globs by what they may name); from an unknown
/// directory a relative one stays relative, for the edge to resolve against the call's.
fn directory(cwd: Option<&str>, path: &str) -> Option<String> {
    let path = normalise_path(path);
    match path {
        _ if path.contains(['$', '`']) => None,
        _ if !is_relative(&path) => Some(path),
        _ => Some(match cwd {
            Some(cwd) => normalise_path(&format!("{cwd}/{path}")),
            None => path,
        }),
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
