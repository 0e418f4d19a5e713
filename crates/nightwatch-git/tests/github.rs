//! The GitHub PR provider against a stand-in for GitHub's pulls API on 127.0.0.1, answering
//! with bodies in GitHub's documented shape (`tests/fixtures/github/`): what each answer means
//! for a branch, what the request carries, and that every failure is "unknown", which keeps.
//! Then the whole sweep on real repositories: a squash-merged branch goes, the others stay.

mod fixture;

use fixture::{Repo, git};
use nightwatch_git::{GitInventory, GithubPulls};
use nightwatch_janitor::{
    AllowAll, Decision, Facts, GithubPr, GithubRepo, Inventory, Item, JanitorState, Kind, Outcome,
    Plan, PrProvider, PrState, SweepRules, apply, plan,
};
use nightwatch_spec::notify::{EnvName, HttpUrl};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The head commit of the merged PR in `pulls_merged.json` and `pulls_page2.json`.
const MERGED_SHA: &str = "a41c7e3f0b9d2c58e6f1a7b3c9d0e2f4a6b8c1d3";

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/github/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn octo() -> GithubRepo {
    GithubRepo::parse("octo-org/app").unwrap()
}

/// One request as the stand-in received it.
#[derive(Clone, Debug)]
struct Request {
    /// Path and query, as sent.
    target: String,
    /// Names lowercased.
    headers: Vec<(String, String)>,
}

impl Request {
    fn headers(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers(name).first().copied()
    }

    fn query(&self, key: &str) -> Option<&str> {
        let (_, query) = self.target.split_once('?')?;
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
    }
}

struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

fn ok(body: impl Into<Vec<u8>>) -> Option<Answer> {
    Some(Answer {
        status: 200,
        headers: Vec::new(),
        body: body.into(),
    })
}

type Answerer = dyn Fn(&Request, &str) -> Option<Answer> + Send;

/// GitHub's pulls API, as far as the provider reads it: every request is recorded, and
/// `answer(request, base_url)` decides the reply; `None` holds the connection without
/// answering, so the client times out. Stops when dropped.
struct StandIn {
    base_url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StandIn {
    fn start(answer: impl Fn(&Request, &str) -> Option<Answer> + Send + 'static) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (base_url, requests, stop) = (base_url.clone(), requests.clone(), stop.clone());
            let answer: Box<Answerer> = Box::new(answer);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve_one(stream, &*answer, &base_url, &requests);
                    }
                }
            })
        };
        StandIn {
            base_url,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    fn client(&self) -> GithubPulls {
        GithubPulls::new(&self.base_url, Some("ghp_standin0token".into()))
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.base_url.trim_start_matches("http://"));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve_one(stream: TcpStream, answer: &Answerer, base_url: &str, requests: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let target = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let request = Request { target, headers };
    requests.lock().unwrap().push(request.clone());
    let Some(reply) = answer(&request, base_url) else {
        std::thread::sleep(Duration::from_millis(1500));
        return;
    };
    let reason = match reply.status {
        200 => "OK",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        _ => "Whatever",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = reader.into_inner();
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&reply.body);
    let _ = stream.flush();
}

fn unknown_reason(state: PrState) -> String {
    match state {
        PrState::Unknown { why } => why,
        other => panic!("expected an unknown PR state, got {other:?}"),
    }
}

#[test]
fn merged_pr_gives_back_its_head_commit() {
    let github = StandIn::start(|_, _| ok(fixture("pulls_merged.json")));
    assert_eq!(
        github.client().pr_state(&octo(), "fix-4411"),
        PrState::Merged {
            commit: MERGED_SHA.into()
        }
    );
}

#[test]
fn an_open_pr_wins_over_an_earlier_merge() {
    let github = StandIn::start(|_, _| ok(fixture("pulls_open.json")));
    assert_eq!(
        github.client().pr_state(&octo(), "fix-4411"),
        PrState::Open {
            url: Some("https://github.com/octo-org/app/pull/4420".into())
        }
    );
}

#[test]
fn closed_without_merging_is_closed() {
    let github = StandIn::start(|_, _| ok(fixture("pulls_closed.json")));
    assert_eq!(
        github.client().pr_state(&octo(), "fix-4411"),
        PrState::Closed
    );
}

#[test]
fn an_empty_list_is_no_pr() {
    let github = StandIn::start(|_, _| ok("[]"));
    assert_eq!(github.client().pr_state(&octo(), "fix-4411"), PrState::NoPr);
}

#[test]
fn the_request_carries_the_token_and_names_exactly_the_branch() {
    let github = StandIn::start(|_, _| ok("[]"));
    // A trailing slash on the base URL is not doubled.
    let client = GithubPulls::new(
        &format!("{}/", github.base_url),
        Some("ghp_abc123\n".into()),
    );
    assert_eq!(client.pr_state(&octo(), "agent/fix 7&x#y"), PrState::NoPr);
    GithubPulls::new(&github.base_url, Some("   ".into())).pr_state(&octo(), "fix-4411");

    let requests = github.requests();
    assert_eq!(requests.len(), 2);
    let sent = &requests[0];
    assert_eq!(
        sent.target,
        "/repos/octo-org/app/pulls?state=all&head=octo-org:agent/fix%207%26x%23y&per_page=100"
    );
    assert_eq!(sent.headers("authorization"), ["Bearer ghp_abc123"]);
    assert_eq!(sent.headers("accept"), ["application/vnd.github+json"]);
    assert_eq!(sent.header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(sent.headers("user-agent"), ["nightwatch"]);
    // A blank token is no token.
    assert_eq!(requests[1].header("authorization"), None);
    assert_eq!(requests[1].query("head"), Some("octo-org:fix-4411"));
}

#[test]
fn pages_are_followed_to_the_merge_on_page_two() {
    let github = StandIn::start(|request, base| {
        let page = |n: u32| {
            format!(
                "{base}/repositories/1296269/pulls?state=all&head=octo-org%3Afix-4411&per_page=100&page={n}"
            )
        };
        match request.query("page") {
            Some("2") => Some(Answer {
                status: 200,
                headers: vec![(
                    "Link",
                    format!("<{}>; rel=\"prev\", <{}>; rel=\"first\"", page(1), page(1)),
                )],
                body: fixture("pulls_page2.json").into(),
            }),
            _ => Some(Answer {
                status: 200,
                headers: vec![(
                    "Link",
                    format!("<{}>; rel=\"next\", <{}>; rel=\"last\"", page(2), page(2)),
                )],
                body: fixture("pulls_page1.json").into(),
            }),
        }
    });
    assert_eq!(
        github.client().pr_state(&octo(), "fix-4411"),
        PrState::Merged {
            commit: MERGED_SHA.into()
        }
    );
    let requests = github.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].target,
        "/repositories/1296269/pulls?state=all&head=octo-org%3Afix-4411&per_page=100&page=2"
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some("Bearer ghp_standin0token")
    );
}

#[test]
fn pages_are_bounded_and_never_followed_to_another_host() {
    let endless = StandIn::start(|request, base| {
        let n: u32 = request
            .query("page")
            .and_then(|p| p.parse().ok())
            .unwrap_or(1);
        Some(Answer {
            status: 200,
            headers: vec![("Link", format!("<{base}/x?page={}>; rel=\"next\"", n + 1))],
            body: fixture("pulls_page1.json").into(),
        })
    });
    let why = unknown_reason(endless.client().pr_state(&octo(), "fix-4411"));
    assert!(why.contains("more than 10 pages"), "{why}");
    assert_eq!(endless.requests().len(), 10);

    let elsewhere = StandIn::start(|_, _| {
        Some(Answer {
            status: 200,
            headers: vec![(
                "Link",
                "<https://collector.example/pulls?page=2>; rel=\"next\"".to_owned(),
            )],
            body: fixture("pulls_page1.json").into(),
        })
    });
    let why = unknown_reason(elsewhere.client().pr_state(&octo(), "fix-4411"));
    assert!(why.contains("on another host: not followed"), "{why}");
    assert_eq!(elsewhere.requests().len(), 1);
}

#[test]
fn a_rate_limit_is_unknown_until_its_reset_and_not_asked_again() {
    let github = StandIn::start(|_, _| {
        Some(Answer {
            status: 403,
            headers: vec![
                ("x-ratelimit-limit", "5000".into()),
                ("x-ratelimit-remaining", "0".into()),
                ("x-ratelimit-used", "5000".into()),
                ("x-ratelimit-reset", "1773144000".into()),
                ("x-ratelimit-resource", "core".into()),
            ],
            body: fixture("rate_limited.json").into(),
        })
    });
    let client = github.client();
    let why = unknown_reason(client.pr_state(&octo(), "fix-4411"));
    assert_eq!(
        why,
        "rate limited until 2026-03-10T12:00:00Z (GitHub answered 403: API rate limit \
         exceeded for installation ID 44019281.)"
    );
    let again = unknown_reason(client.pr_state(&octo(), "fix-4412"));
    assert!(again.starts_with("rate limited until"), "{again}");
    assert!(again.contains("not asked again"), "{again}");
    assert_eq!(github.requests().len(), 1);
}

#[test]
fn a_secondary_rate_limit_waits_for_retry_after() {
    let github = StandIn::start(|_, _| {
        Some(Answer {
            status: 429,
            headers: vec![("retry-after", "60".into())],
            body: br#"{"message":"You have exceeded a secondary rate limit."}"#.to_vec(),
        })
    });
    let why = unknown_reason(github.client().pr_state(&octo(), "fix-4411"));
    assert!(why.starts_with("rate limited for 60 s"), "{why}");
    assert!(
        why.contains("429: You have exceeded a secondary rate limit."),
        "{why}"
    );
}

#[test]
fn a_refused_token_is_unknown_and_says_so() {
    let github = StandIn::start(|_, _| {
        Some(Answer {
            status: 401,
            headers: Vec::new(),
            body: fixture("bad_credentials.json").into(),
        })
    });
    let client = github.client();
    assert_eq!(
        unknown_reason(client.pr_state(&octo(), "fix-4411")),
        "the GitHub token was refused (401): Bad credentials"
    );
    assert!(unknown_reason(client.pr_state(&octo(), "fix-4412")).contains("not asked again"));
    assert_eq!(github.requests().len(), 1);

    let anonymous = GithubPulls::new(&github.base_url, None);
    let why = unknown_reason(anonymous.pr_state(&octo(), "fix-4411"));
    assert!(
        why.contains("asks for a token (401) and none was set"),
        "{why}"
    );
}

#[test]
fn other_statuses_are_unknown_with_what_github_said() {
    for (status, says) in [
        (
            404,
            "GitHub has no repository octo-org/app (404), or the token cannot see it",
        ),
        (
            403,
            "GitHub refused access to octo-org/app (403): Resource protected by organization SAML enforcement.",
        ),
        (
            500,
            "GitHub answered 500 for octo-org/app: Resource protected by organization SAML enforcement.",
        ),
    ] {
        let github = StandIn::start(move |_, _| {
            Some(Answer {
                status,
                headers: Vec::new(),
                body: br#"{"message":"Resource protected by organization SAML enforcement."}"#
                    .to_vec(),
            })
        });
        assert_eq!(
            unknown_reason(github.client().pr_state(&octo(), "fix-4411")),
            says
        );
    }
}

#[test]
fn garbage_is_unknown_never_a_panic() {
    let bodies: Vec<Vec<u8>> = vec![
        b"<html><body>Unicorn!</body></html>".to_vec(),
        b"".to_vec(),
        b"[".to_vec(),
        b"{\"message\": \"not a list\"}".to_vec(),
        b"[{\"number\": \"seven\"}]".to_vec(),
        b"[{\"number\": 1, \"state\": \"open\"}]".to_vec(),
        b"[null]".to_vec(),
        vec![0xff, 0xfe, 0x00, 0x5b, 0x5d],
    ];
    for body in bodies {
        let shown = String::from_utf8_lossy(&body).into_owned();
        let github = StandIn::start(move |_, _| ok(body.clone()));
        let why = unknown_reason(github.client().pr_state(&octo(), "fix-4411"));
        assert!(
            why.contains("not a list of pull requests"),
            "{shown:?}: {why}"
        );
    }
    // Well-formed, but listing another branch's PRs: the head filter was not applied.
    let github = StandIn::start(|_, _| ok(fixture("pulls_merged.json")));
    let why = unknown_reason(github.client().pr_state(&octo(), "fix-9999"));
    assert!(why.contains("head filter was not applied"), "{why}");
}

#[test]
fn silence_times_out_and_is_not_waited_for_again() {
    let github = StandIn::start(|_, _| None);
    let client = github.client().with_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let why = unknown_reason(client.pr_state(&octo(), "fix-4411"));
    assert!(why.contains("did not answer within 300ms"), "{why}");
    let why = unknown_reason(client.pr_state(&octo(), "fix-4412"));
    assert!(why.contains("not asked again"), "{why}");
    assert!(started.elapsed() < Duration::from_millis(1400));
}

#[test]
fn an_unreachable_github_is_unknown() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = GithubPulls::new(&format!("http://127.0.0.1:{port}"), None);
    let why = unknown_reason(client.pr_state(&octo(), "fix-4411"));
    assert!(why.starts_with("cannot reach GitHub at 127.0.0.1"), "{why}");
}

// The whole sweep, on real repositories.

fn github_inventory(repo: &Repo, base_url: &str, configured: Option<&str>) -> GitInventory {
    let config = GithubPr {
        repo: configured.map(|r| GithubRepo::parse(r).unwrap()),
        base_url: Some(HttpUrl::parse(base_url).unwrap()),
        // Unset: the stand-in needs no token.
        token_env: Some(EnvName::parse("NIGHTWATCH_TEST_NO_SUCH_TOKEN").unwrap()),
    };
    GitInventory::new(
        vec![repo.root()],
        "main".to_owned(),
        PrProvider::Github(config),
        &|_| None,
    )
}

/// Answers as GitHub would for branches whose PR merged from the given commit; no PR for the
/// others.
fn merged_prs(merged: Arc<Mutex<HashMap<String, String>>>) -> StandIn {
    StandIn::start(move |request, _| {
        let branch = request.query("head")?.strip_prefix("octo-org:")?.to_owned();
        match merged.lock().unwrap().get(&branch) {
            Some(sha) => ok(fixture("pulls_merged.json")
                .replace(MERGED_SHA, sha)
                .replace("fix-4411", &branch)),
            None => ok("[]"),
        }
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn entry<'p>(plan: &'p Plan, kind: Kind, name_ends: &str) -> &'p nightwatch_janitor::PlanEntry {
    plan.entries
        .iter()
        .find(|e| e.kind == kind && e.name.ends_with(name_ends))
        .unwrap_or_else(|| panic!("no {kind} {name_ends} in {plan:?}"))
}

#[test]
fn a_squash_merged_branch_goes_with_its_worktree_and_the_others_stay() {
    let repo = Repo::new();
    let merged = Arc::new(Mutex::new(HashMap::new()));
    let github = merged_prs(merged.clone());
    git(
        &repo.root(),
        &[
            "remote",
            "add",
            "origin",
            &format!("{}/octo-org/app.git", github.base_url),
        ],
    );

    // `squashed`: two commits, squash-merged into main as one; its PR merged from its tip.
    let squashed = repo.add_worked_worktree("squashed");
    repo.write(&squashed, "squashed-2.txt", "more\n");
    let squashed_tip = repo.commit(&squashed, "second commit on squashed");
    git(&repo.root(), &["merge", "-q", "--squash", "squashed"]);
    repo.commit(&repo.root(), "squashed (#4411)");
    // `moved-on`: squash-merged too, then a commit after the merge.
    let moved_on = repo.add_worked_worktree("moved-on");
    let merged_from = git(&moved_on, &["rev-parse", "HEAD"]);
    git(&repo.root(), &["merge", "-q", "--squash", "moved-on"]);
    repo.commit(&repo.root(), "moved-on (#4412)");
    repo.write(&moved_on, "late.txt", "after the merge\n");
    let moved_on_tip = repo.commit(&moved_on, "work after the merge");
    // `fresh`: made just now at main's tip, no PR.
    git(&repo.root(), &["branch", "fresh", "main"]);
    merged.lock().unwrap().extend([
        ("squashed".to_owned(), squashed_tip.clone()),
        ("moved-on".to_owned(), merged_from.clone()),
    ]);

    let inventory = github_inventory(&repo, &github.base_url, None);
    let (worktrees, branches) = (inventory.worktrees(), inventory.branches());
    let mut items: Vec<Item> = worktrees.list().unwrap();
    items.extend(branches.list().unwrap());

    let facts = |name: &str| {
        items
            .iter()
            .find_map(|i| match &i.facts {
                Facts::Branch(b) if b.name == name => Some(b.clone()),
                _ => None,
            })
            .unwrap()
    };
    let sq = facts("squashed");
    assert_eq!(sq.tip, squashed_tip);
    assert_eq!(
        sq.merged_commit, None,
        "a squash leaves the tip out of main"
    );
    assert_eq!(
        sq.pr,
        PrState::Merged {
            commit: squashed_tip.clone()
        }
    );
    assert!(
        sq.tip_time_ms
            .is_some_and(|t| (now_ms() - t).abs() < 600_000)
    );
    assert_eq!(
        facts("moved-on").pr,
        PrState::Merged {
            commit: merged_from.clone()
        }
    );
    let fresh = facts("fresh");
    assert_eq!(fresh.pr, PrState::NoPr);
    assert_eq!(fresh.merged_commit.as_deref(), Some(fresh.tip.as_str()));
    // The worktree and its branch asked once between them.
    let asked = |branch: &str| {
        github
            .requests()
            .iter()
            .filter(|r| r.query("head") == Some(&format!("octo-org:{branch}")))
            .count()
    };
    assert_eq!(asked("squashed"), 1);

    let seen = now_ms();
    let mut state = JanitorState::new();
    state.observe(&items, seen);
    let rules = SweepRules::default();

    // Seconds after the sighting, nothing goes: the new branch least of all.
    let early = plan(&items, &rules, seen + 5_000, &state);
    assert_eq!(early.removals().count(), 0, "{early:?}");
    let fresh_early = entry(&early, Kind::Branch, "fresh");
    assert!(
        fresh_early
            .reasons
            .iter()
            .any(|r| r.starts_with("too young: 5s old")),
        "{:?}",
        fresh_early.reasons
    );

    // Two days on: the squash-merged worktree and its branch go; the others stay.
    let later = seen + 2 * 86_400_000;
    let planned = plan(&items, &rules, later, &state);
    let removals: Vec<&str> = planned.removals().map(|e| e.name.as_str()).collect();
    assert_eq!(removals.len(), 2, "{planned:?}");
    assert!(entry(&planned, Kind::Worktree, "/squashed").decision == Decision::Remove);
    let sq_entry = entry(&planned, Kind::Branch, "squashed");
    assert_eq!(sq_entry.decision, Decision::Remove);
    assert!(
        sq_entry
            .reasons
            .contains(&format!("PR merged from its tip {}", &squashed_tip[..12])),
        "{:?}",
        sq_entry.reasons
    );
    let moved = entry(&planned, Kind::Branch, "moved-on");
    assert_eq!(moved.decision, Decision::Keep);
    assert!(
        moved.reasons.contains(&format!(
            "PR merged from {} but the tip is now {}",
            &merged_from[..12],
            &moved_on_tip[..12]
        )),
        "{:?}",
        moved.reasons
    );
    let fresh_later = entry(&planned, Kind::Branch, "fresh");
    assert_eq!(fresh_later.decision, Decision::Keep);
    assert!(
        fresh_later
            .reasons
            .iter()
            .any(|r| r
                .ends_with("ancestry alone does not delete a branch (branches.ancestry: false)")),
        "{:?}",
        fresh_later.reasons
    );
    // Only where the policy allows ancestry does the fresh branch go, and only once old.
    let mut by_ancestry = SweepRules::default();
    by_ancestry.branches.ancestry = true;
    let allowed = plan(&items, &by_ancestry, later, &state);
    assert_eq!(
        entry(&allowed, Kind::Branch, "fresh").decision,
        Decision::Remove
    );
    let allowed_early = plan(&items, &by_ancestry, seen + 5_000, &state);
    assert_eq!(
        entry(&allowed_early, Kind::Branch, "fresh").decision,
        Decision::Keep
    );

    let inventories: [&dyn Inventory; 2] = [&worktrees, &branches];
    let applied = apply(
        &planned,
        &inventories,
        &rules,
        later,
        &mut state,
        &mut AllowAll,
    );
    let outcomes: Vec<(Kind, &Outcome)> = applied.iter().map(|a| (a.kind, &a.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            (Kind::Worktree, &Outcome::Removed),
            (Kind::Branch, &Outcome::Removed)
        ],
        "{applied:?}"
    );
    let step = &applied[1].removal.as_ref().unwrap().steps[0];
    assert!(
        step.detail
            .contains("git update-ref -d refs/heads/squashed"),
        "{step:?}"
    );
    assert!(!squashed.exists());
    assert_eq!(git(&repo.root(), &["branch", "--list", "squashed"]), "");
    for kept in ["moved-on", "fresh"] {
        assert_ne!(git(&repo.root(), &["branch", "--list", kept]), "", "{kept}");
    }

    // Asked directly, the inventory itself refuses the branch with work after its merge.
    git(
        &repo.root(),
        &["worktree", "remove", moved_on.to_str().unwrap()],
    );
    let id = format!("{}#moved-on", repo.root().display());
    let listed = branches.inspect(&id).unwrap().unwrap();
    let refused = branches.remove(&listed, later);
    let error = refused.error().unwrap();
    assert!(
        error.contains("is not in main and no PR was merged from it"),
        "{error}"
    );
    assert_ne!(git(&repo.root(), &["branch", "--list", "moved-on"]), "");
}

#[test]
fn a_remote_not_on_github_keeps_everything_unless_the_repo_is_named() {
    let repo = Repo::new();
    repo.add_worked_worktree("fix");
    let merged = Arc::new(Mutex::new(HashMap::new()));
    let github = merged_prs(merged.clone());
    let branch_pr = |inventory: &GitInventory| match &inventory.branches().list().unwrap()[0].facts
    {
        Facts::Branch(b) => b.pr.clone(),
        other => panic!("{other:?}"),
    };

    let why = unknown_reason(branch_pr(&github_inventory(&repo, &github.base_url, None)));
    assert!(why.contains("cannot read the origin remote"), "{why}");

    git(
        &repo.root(),
        &[
            "remote",
            "add",
            "origin",
            "https://bot:glpat-secret@gitlab.com/octo-org/app.git",
        ],
    );
    let why = unknown_reason(branch_pr(&github_inventory(&repo, &github.base_url, None)));
    assert!(
        why.contains("the origin remote is on gitlab.com, not on the GitHub at 127.0.0.1"),
        "{why}"
    );
    assert!(!why.contains("glpat-secret"), "{why}");
    assert!(github.requests().is_empty());

    // Named in the policy, the repository is asked whatever the remote says.
    let tip = git(&repo.root(), &["rev-parse", "fix"]);
    merged.lock().unwrap().insert("fix".to_owned(), tip.clone());
    let named = github_inventory(&repo, &github.base_url, Some("octo-org/app"));
    assert_eq!(branch_pr(&named), PrState::Merged { commit: tip });
}
