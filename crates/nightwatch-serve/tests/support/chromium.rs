//! Headless Chromium (Debian's `chromium`, which `.ci/run` installs) for tests of the pages:
//! the DOM it built and a screenshot. Shared by this crate's page tests and the binary's
//! live-daemon test (included there by path).
#![allow(dead_code)] // Each includer uses its own share.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const CHROMIUM: &str = "/usr/bin/chromium";
/// A run that takes longer is killed, with its helpers, and the test fails.
pub const CHROMIUM_DEADLINE: Duration = Duration::from_secs(60);

/// The DOM headless Chromium built for `url`, serialised (`--dump-dom`): what the browser
/// parsed, so markup that escaped escaping shows up as elements here.
///
/// Fails the test when Chromium is missing (`.ci/run` installs it), exits with an error, or
/// runs past 60 s (it is killed, helpers and all).
pub fn chromium_dom(url: &str) -> String {
    let stdout = run_chromium(&["--dump-dom"], url);
    String::from_utf8(stdout).expect("Chromium's DOM dump is UTF-8")
}

/// Saves a 1280x900 PNG screenshot of `url` to `out`, with the same failure rules as
/// [`chromium_dom`].
pub fn chromium_screenshot(url: &str, out: &Path) {
    chromium_screenshot_sized(url, out, 1280, 900);
}

/// A screenshot `width` x `height` pixels, for a page whose lower part matters too.
pub fn chromium_screenshot_sized(url: &str, out: &Path, width: u32, height: u32) {
    let arg = format!("--screenshot={}", out.display());
    let size = format!("--window-size={width},{height}");
    run_chromium(&[&arg, &size, "--hide-scrollbars"], url);
    assert!(
        out.exists(),
        "Chromium exited without writing {}",
        out.display()
    );
}

/// Runs headless Chromium once on `url` with `args`, in a throwaway profile, and returns its
/// stdout. The browser leads its own process group so a timeout kills its helpers (zygote,
/// renderer) too; output goes to files, so a large DOM cannot fill a pipe and stall it.
pub fn run_chromium(args: &[&str], url: &str) -> Vec<u8> {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: these tests drive a real headless browser. `.ci/run` installs it \
         (Debian package `chromium`); on a workstation: sudo apt-get install chromium"
    );
    let scratch = tempfile::tempdir().expect("temp dir for Chromium");
    let (out_path, err_path) = (scratch.path().join("stdout"), scratch.path().join("stderr"));
    let mut command = Command::new(CHROMIUM);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-sync",
            "--mute-audio",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.path().join("profile").display()
        ))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).expect("stdout file"))
        .stderr(File::create(&err_path).expect("stderr file"));
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {CHROMIUM}: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for Chromium") {
            break status;
        }
        if started.elapsed() > CHROMIUM_DEADLINE {
            // Negative pid: the whole group this child leads, and only that.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            panic!(
                "Chromium ran past {CHROMIUM_DEADLINE:?} on {url} and was killed; stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "Chromium failed ({status}) on {url}; stderr:\n{}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    std::fs::read(&out_path).expect("Chromium's stdout")
}

pub fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).expect("screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        path.display()
    );
    assert!(
        bytes.len() > 8 * 1024,
        "{} is only {} bytes: a blank or broken page?",
        path.display(),
        bytes.len()
    );
}

/// The tags in a serialised DOM. Chromium writes every `<` of text and attribute values as
/// `&lt;`, so each literal `<` starts a tag (or a comment or the doctype).
pub fn tags(dom: &str) -> Vec<&str> {
    dom.split('<')
        .skip(1)
        .map(|rest| rest.split('>').next().unwrap_or(rest))
        .collect()
}

/// The attribute names of one serialised tag (`li class="a" data-x="b"` gives `class`,
/// `data-x`). Chromium quotes every value with `"` and writes a `"` inside one as `&quot;`.
pub fn attribute_names(tag: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = tag.trim_end_matches('/');
    rest = rest.trim_start_matches(|c: char| !c.is_whitespace()); // the element's name
    loop {
        rest = rest.trim_start();
        let end = rest.find(['=', ' ', '\n', '\t']).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        names.push(&rest[..end]);
        rest = &rest[end..];
        if let Some(value) = rest.strip_prefix("=\"") {
            rest = value.split_once('"').map_or("", |(_, after)| after);
        }
    }
    names
}
