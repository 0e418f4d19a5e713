//! Globs compiled on first use.
//!
//! Every glob is parsed, and so checked, when the policy is read; building its regex waits until
//! a decision needs it. A hook process makes one decision and touches a handful of rules, so it
//! never pays for compiling the rest (most of what loading a policy used to cost).

use globset::{Glob, GlobMatcher, GlobSet, GlobSetBuilder};
use std::sync::OnceLock;

/// One glob, its matcher built on first use.
#[derive(Clone, Debug)]
pub(crate) struct LazyGlob {
    glob: Glob,
    matcher: OnceLock<GlobMatcher>,
}

impl LazyGlob {
    pub(crate) fn new(glob: Glob) -> LazyGlob {
        LazyGlob {
            glob,
            matcher: OnceLock::new(),
        }
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.matcher
            .get_or_init(|| self.glob.compile_matcher())
            .is_match(text)
    }
}

/// A set of globs, built into one `GlobSet` on first use.
#[derive(Clone, Debug)]
pub(crate) struct LazyGlobSet {
    globs: Vec<Glob>,
    set: OnceLock<Option<GlobSet>>,
}

impl LazyGlobSet {
    pub(crate) fn new(globs: Vec<Glob>) -> LazyGlobSet {
        LazyGlobSet {
            globs,
            set: OnceLock::new(),
        }
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        let set = self.set.get_or_init(|| {
            let mut builder = GlobSetBuilder::new();
            for glob in &self.globs {
                builder.add(glob.clone());
            }
            builder.build().ok()
        });
        match set {
            Some(set) => set.is_match(text),
            // A set too large for one regex: each glob on its own gives the same answer.
            None => self
                .globs
                .iter()
                .any(|glob| glob.compile_matcher().is_match(text)),
        }
    }
}
