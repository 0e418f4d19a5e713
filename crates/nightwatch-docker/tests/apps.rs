//! `AppEngine` (idle control's runtime) against the real Engine on this machine. Each test
//! labels what it creates `nightwatch.test=<run>` and removes it when done, failed or not.

mod common;

use common::{IMAGE, Scratch, docker};
use globset::Glob;
use nightwatch_docker::AppEngine;
use nightwatch_idle::spec::SignalSpec;
use nightwatch_idle::{Observed, Runtime, SignalKind, SuspendMode, Target};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// As the daemon holds it.
fn engine() -> Arc<dyn Runtime> {
    Arc::new(
        AppEngine::from_docker_host(std::env::var("DOCKER_HOST").ok().as_deref())
            .expect("engine")
            .with_stop_timeout(Duration::from_secs(5)),
    )
}

/// A container of this run that runs until stopped; `--init` so it ends on SIGTERM, as an
/// app would, and a stop that kills instead shows in its exit code.
fn sleeper(scratch: &Scratch, what: &str, options: &[&str]) -> String {
    let name = scratch.name(what);
    let mut all = vec!["--init", "--name", name.as_str()];
    all.extend(options);
    scratch.container("run", &all, &["sleep", "3600"]);
    name
}

fn container(name: &str) -> Target {
    Target::Container(name.to_owned())
}

async fn observe(engine: &Arc<dyn Runtime>, target: &Target) -> Observed {
    engine.observe(target).await.expect("observe")
}

/// `docker inspect -f FORMAT NAME`.
fn inspect(name: &str, format: &str) -> String {
    docker(&["inspect", "-f", format, name])
}

fn exec_signal() -> SignalSpec {
    SignalSpec {
        name: "shell".into(),
        kind: SignalKind::Exec,
        activity: true,
    }
}

fn connections(ports: &[u16]) -> SignalSpec {
    SignalSpec {
        name: "db-clients".into(),
        kind: SignalKind::Connections {
            ports: ports.to_vec(),
        },
        activity: true,
    }
}

fn process(pattern: &str) -> SignalSpec {
    SignalSpec {
        name: "backup".into(),
        kind: SignalKind::Process {
            pattern: pattern.into(),
            glob: Glob::new(pattern).expect("glob").compile_matcher(),
        },
        activity: false,
    }
}

async fn count(engine: &Arc<dyn Runtime>, target: &Target, signal: &SignalSpec) -> usize {
    let seen = engine
        .signals(target, std::slice::from_ref(signal))
        .await
        .expect("signals");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].name, signal.name);
    assert_eq!(seen[0].activity, signal.activity);
    seen[0].count
}

/// Waits (up to 15 s) for the signal's count to be `want`: what a container does after a
/// `docker` command returns takes a moment to show.
async fn wait_count(engine: &Arc<dyn Runtime>, target: &Target, signal: &SignalSpec, want: usize) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = count(engine, target, signal).await;
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "signal {} stayed at {now}, not {want}",
            signal.name
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observes_running_paused_stopped_and_missing() {
    let scratch = Scratch::new("apps-observe");
    let engine = engine();
    let name = sleeper(&scratch, "app", &[]);
    let app = container(&name);

    assert_eq!(observe(&engine, &app).await, Observed::Running);
    docker(&["pause", &name]);
    assert_eq!(observe(&engine, &app).await, Observed::Paused);
    docker(&["unpause", &name]);
    docker(&["stop", &name]);
    assert_eq!(observe(&engine, &app).await, Observed::Stopped);

    let created = scratch.name("created");
    scratch.container("create", &["--name", &created], &["sleep", "3600"]);
    assert_eq!(
        observe(&engine, &container(&created)).await,
        Observed::Stopped
    );

    let nowhere = scratch.name("never-created");
    assert_eq!(
        observe(&engine, &container(&nowhere)).await,
        Observed::Missing
    );
    let project = Target::Compose(scratch.name("no-project"));
    assert_eq!(observe(&engine, &project).await, Observed::Missing);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_then_resume() {
    let scratch = Scratch::new("apps-pause");
    let engine = engine();
    let name = sleeper(&scratch, "app", &[]);
    let app = container(&name);

    engine
        .suspend(&app, SuspendMode::Pause)
        .await
        .expect("pause");
    assert_eq!(observe(&engine, &app).await, Observed::Paused);
    assert_eq!(inspect(&name, "{{.State.Status}}"), "paused");
    // Twice is fine: a paused app is already as asked.
    engine
        .suspend(&app, SuspendMode::Pause)
        .await
        .expect("pause again");

    engine.resume(&app).await.expect("resume");
    assert_eq!(observe(&engine, &app).await, Observed::Running);
    engine.resume(&app).await.expect("resume a running app");
    assert_eq!(observe(&engine, &app).await, Observed::Running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_then_resume_starts_it_and_keeps_container_and_volume() {
    let mut scratch = Scratch::new("apps-stop");
    let engine = engine();
    let volume = scratch.volume("data");
    let mount = format!("{volume}:/data");
    let name = sleeper(&scratch, "app", &["-v", &mount]);
    let app = container(&name);
    let id = inspect(&name, "{{.Id}}");

    let started = Instant::now();
    engine.suspend(&app, SuspendMode::Stop).await.expect("stop");
    assert_eq!(observe(&engine, &app).await, Observed::Stopped);
    // SIGTERM (143), not the kill after the timeout (137).
    assert_eq!(inspect(&name, "{{.State.ExitCode}}"), "143");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop waited out its timeout"
    );
    engine
        .suspend(&app, SuspendMode::Stop)
        .await
        .expect("stop again");
    // A stopped app is not paused by a pause either, and that is no error.
    engine
        .suspend(&app, SuspendMode::Pause)
        .await
        .expect("pause a stopped app");
    assert_eq!(observe(&engine, &app).await, Observed::Stopped);

    engine.resume(&app).await.expect("resume");
    assert_eq!(observe(&engine, &app).await, Observed::Running);
    assert_eq!(
        inspect(&name, "{{.Id}}"),
        id,
        "the same container, started again"
    );
    assert_eq!(inspect(&name, "{{range .Mounts}}{{.Name}}{{end}}"), volume);

    // A paused app stopped: the Engine thaws it for the stop signal, so it ends gracefully.
    docker(&["pause", &name]);
    let started = Instant::now();
    engine
        .suspend(&app, SuspendMode::Stop)
        .await
        .expect("stop a paused app");
    assert_eq!(observe(&engine, &app).await, Observed::Stopped);
    assert_eq!(inspect(&name, "{{.State.ExitCode}}"), "143");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop waited out its timeout"
    );
    engine.resume(&app).await.expect("resume");
    assert_eq!(observe(&engine, &app).await, Observed::Running);

    assert_eq!(scratch.ids().len(), 1);
    docker(&["volume", "inspect", &volume]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compose_project_is_all_its_containers() {
    let scratch = Scratch::new("apps-compose");
    let engine = engine();
    let project = scratch.name("shop");
    let label = format!("com.docker.compose.project={project}");
    let db = sleeper(&scratch, "db", &["--label", &label]);
    let web = sleeper(&scratch, "web", &["--label", &label]);
    // `docker compose run`'s container, finished: not part of the app, and never started.
    let oneoff = scratch.name("oneoff");
    scratch.container(
        "run",
        &[
            "--name",
            &oneoff,
            "--label",
            &label,
            "--label",
            "com.docker.compose.oneoff=True",
        ],
        &["sh", "-c", "exit 0"],
    );
    docker(&["wait", &oneoff]);
    // Another project's container, whose name starts the same.
    let other_label = format!("com.docker.compose.project={project}-other");
    let other = sleeper(&scratch, "other", &["--label", &other_label]);
    let shop = Target::Compose(project.clone());

    assert_eq!(observe(&engine, &shop).await, Observed::Running);
    docker(&["pause", &web]);
    assert_eq!(
        observe(&engine, &shop).await,
        Observed::Mixed("1 running, 1 paused".into())
    );

    engine
        .suspend(&shop, SuspendMode::Pause)
        .await
        .expect("pause");
    assert_eq!(observe(&engine, &shop).await, Observed::Paused);
    assert_eq!(inspect(&db, "{{.State.Status}}"), "paused");
    assert_eq!(inspect(&other, "{{.State.Status}}"), "running");
    engine.resume(&shop).await.expect("resume");
    assert_eq!(observe(&engine, &shop).await, Observed::Running);

    engine
        .suspend(&shop, SuspendMode::Stop)
        .await
        .expect("stop");
    assert_eq!(observe(&engine, &shop).await, Observed::Stopped);
    assert_eq!(inspect(&other, "{{.State.Status}}"), "running");
    docker(&["start", &db]);
    assert_eq!(
        observe(&engine, &shop).await,
        Observed::Mixed("1 running, 1 stopped".into())
    );
    // Half started, one paused: each woken the way it needs.
    docker(&["pause", &db]);
    engine.resume(&shop).await.expect("resume");
    assert_eq!(observe(&engine, &shop).await, Observed::Running);
    assert_eq!(inspect(&web, "{{.State.Status}}"), "running");
    assert_eq!(inspect(&db, "{{.State.Status}}"), "running");
    assert_eq!(inspect(&oneoff, "{{.State.Status}}"), "exited");
    assert_eq!(scratch.ids().len(), 4, "nothing was removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_targets_cannot_be_suspended_or_resumed() {
    let scratch = Scratch::new("apps-missing");
    let engine = engine();
    let name = scratch.name("never-created");
    let app = container(&name);

    let error = engine
        .suspend(&app, SuspendMode::Pause)
        .await
        .expect_err("paused a container that is not there");
    assert_eq!(error, format!("container {name}: no such container"));
    let error = engine
        .resume(&app)
        .await
        .expect_err("resumed a container that is not there");
    assert_eq!(error, format!("container {name}: no such container"));
    let project = Target::Compose(scratch.name("no-project"));
    let error = engine
        .suspend(&project, SuspendMode::Stop)
        .await
        .expect_err("stopped a project that has no container");
    assert!(error.contains("no container is labelled"), "{error}");
    // Nothing there is using it.
    assert_eq!(count(&engine, &app, &exec_signal()).await, 0);

    let error = engine
        .observe(&container("../images/json"))
        .await
        .expect_err("a path is no container name");
    assert!(error.contains("not a container name"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_sessions_are_counted_until_they_end() {
    let scratch = Scratch::new("apps-exec");
    let engine = engine();
    let name = sleeper(&scratch, "app", &[]);
    let app = container(&name);
    let shell = exec_signal();

    assert_eq!(count(&engine, &app, &shell).await, 0);
    docker(&["exec", "-d", &name, "sleep", "4"]);
    assert_eq!(count(&engine, &app, &shell).await, 1);
    docker(&["exec", "-d", &name, "sleep", "30"]);
    assert_eq!(count(&engine, &app, &shell).await, 2);
    // The short one ends; its exec stays in the container's list, no longer running.
    wait_count(&engine, &app, &shell, 1).await;
    // Paused, the session is still open.
    docker(&["pause", &name]);
    assert_eq!(count(&engine, &app, &shell).await, 1);
    docker(&["unpause", &name]);
    docker(&["restart", "-t", "1", &name]);
    wait_count(&engine, &app, &shell, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engines_health_probes_are_no_exec_session() {
    let scratch = Scratch::new("apps-health");
    let engine = engine();
    // A probe that runs most of the time: two seconds of every two and a half.
    let name = sleeper(
        &scratch,
        "app",
        &[
            "--health-cmd",
            "sleep 2",
            "--health-interval",
            "500ms",
            "--health-timeout",
            "5s",
        ],
    );
    let app = container(&name);
    let shell = exec_signal();

    let deadline = Instant::now() + Duration::from_secs(20);
    let mut probes_seen = 0;
    while probes_seen < 3 {
        assert!(Instant::now() < deadline, "saw {probes_seen} probes only");
        if inspect(&name, "{{len .ExecIDs}}") != "0" {
            probes_seen += 1;
            assert_eq!(count(&engine, &app, &shell).await, 0, "a probe counted");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    docker(&["exec", "-d", &name, "sleep", "30"]);
    assert_eq!(count(&engine, &app, &shell).await, 1);
}

/// Whether `pid`'s network namespace has a listener on `port`.
fn listening(pid: &str, port: u16) -> bool {
    let local = format!(":{port:04X} ");
    ["tcp", "tcp6"].iter().any(|table| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{table}"))
            .unwrap_or_default()
            .lines()
            .any(|line| line.contains(&local) && line.contains(" 0A "))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn established_connections_are_counted_on_their_ports() {
    let scratch = Scratch::new("apps-connections");
    let engine = engine();
    let db = scratch.name("db");
    // nc answers one client; its stdin never ends, so it never hangs up.
    scratch.container(
        "run",
        &["--init", "--name", &db],
        &["sh", "-c", "sleep 3600 | busybox nc -l -p 5432"],
    );
    let app = container(&db);
    let clients = connections(&[5432]);
    let pid = inspect(&db, "{{.State.Pid}}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while !listening(&pid, 5432) {
        assert!(Instant::now() < deadline, "nc never listened");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        count(&engine, &app, &clients).await,
        0,
        "a listener is no connection"
    );

    let address = inspect(&db, "{{.NetworkSettings.IPAddress}}");
    let client = scratch.name("client");
    // `-i`: the client's stdin stays open, so it stays connected.
    scratch.container(
        "run",
        &["-i", "--name", &client],
        &["busybox", "nc", &address, "5432"],
    );
    wait_count(&engine, &app, &clients, 1).await;
    assert_eq!(count(&engine, &app, &connections(&[8080])).await, 0);
    assert_eq!(count(&engine, &app, &connections(&[8080, 5432])).await, 1);
    // The client's own end is no connection into it.
    assert_eq!(count(&engine, &container(&client), &clients).await, 0);
    docker(&["pause", &db]);
    assert_eq!(
        count(&engine, &app, &clients).await,
        1,
        "paused, still connected"
    );
    docker(&["unpause", &db]);

    docker(&["rm", "-f", &client]);
    wait_count(&engine, &app, &clients, 0).await;
    docker(&["stop", "-t", "1", &db]);
    assert_eq!(count(&engine, &app, &clients).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_are_matched_by_their_command_line() {
    let scratch = Scratch::new("apps-process");
    let engine = engine();
    let name = sleeper(&scratch, "app", &[]);
    let app = container(&name);

    assert_eq!(count(&engine, &app, &process("sleep 1234")).await, 0);
    docker(&["exec", "-d", &name, "sleep", "1234"]);
    wait_count(&engine, &app, &process("sleep 1234"), 1).await;
    assert_eq!(count(&engine, &app, &process("sleep 12")).await, 0);
    assert_eq!(count(&engine, &app, &process("sleep 12*")).await, 1);
    // The main `sleep 3600` too.
    assert_eq!(count(&engine, &app, &process("sleep *")).await, 2);
    // A program named with its directory matches a glob without it.
    docker(&["exec", "-d", &name, "/bin/sleep", "1235"]);
    wait_count(&engine, &app, &process("sleep 1235"), 1).await;
    assert_eq!(count(&engine, &app, &process("/bin/sleep 1235")).await, 1);

    docker(&["pause", &name]);
    assert_eq!(count(&engine, &app, &process("sleep 1234")).await, 1);
    docker(&["unpause", &name]);
    docker(&["stop", "-t", "1", &name]);
    assert_eq!(count(&engine, &app, &process("sleep *")).await, 0);

    // Several signals at once, in the order asked.
    docker(&["start", &name]);
    docker(&["exec", "-d", &name, "sleep", "1234"]);
    let asked = [process("sleep 1234"), exec_signal(), connections(&[5432])];
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let seen = engine.signals(&app, &asked).await.expect("signals");
        let counts: Vec<(&str, usize, bool)> = seen
            .iter()
            .map(|s| (s.name.as_str(), s.count, s.activity))
            .collect();
        if counts
            == [
                ("backup", 1, false),
                ("shell", 1, true),
                ("db-clients", 0, true),
            ]
        {
            break;
        }
        assert!(Instant::now() < deadline, "{counts:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_engine_is_an_error_never_an_empty_success() {
    let host = "unix:///nonexistent.sock";
    let engine: Arc<dyn Runtime> =
        Arc::new(AppEngine::from_docker_host(Some(host)).expect("engine"));
    let app = container("shop-web");
    let project = Target::Compose("shop".into());

    let error = engine.observe(&app).await.expect_err("observed nothing");
    assert!(
        error.starts_with(&format!("the Docker Engine at {host} ")),
        "{error}"
    );
    assert!(error.contains("is the daemon running"), "{error}");
    for target in [&app, &project] {
        assert!(engine.observe(target).await.is_err());
        assert!(engine.suspend(target, SuspendMode::Pause).await.is_err());
        assert!(engine.suspend(target, SuspendMode::Stop).await.is_err());
        assert!(engine.resume(target).await.is_err());
        let error = engine
            .signals(target, &[exec_signal()])
            .await
            .expect_err("signals of nothing");
        assert!(error.contains(host), "{error}");
    }

    let error = AppEngine::from_docker_host(Some("ssh://builder@example"))
        .err()
        .expect("an ssh address");
    assert!(
        error.contains("only unix://, tcp:// and http://"),
        "{error}"
    );
    let default = AppEngine::from_docker_host(Some("  ")).expect("blank is the default");
    assert_eq!(default.host(), nightwatch_docker::DEFAULT_HOST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_midway_leaves_the_next_one_working() {
    let scratch = Scratch::new("apps-dropped");
    let engine = engine();
    let name = sleeper(&scratch, "app", &[]);
    let app = container(&name);

    // Dropped while connecting, then while pausing: the next calls connect and act anew.
    for _ in 0..3 {
        let _ = tokio::time::timeout(Duration::ZERO, engine.observe(&app)).await;
    }
    assert_eq!(observe(&engine, &app).await, Observed::Running);
    let _ = tokio::time::timeout(
        Duration::from_micros(50),
        engine.suspend(&app, SuspendMode::Pause),
    )
    .await;
    // Either way, calls from two tasks at once still work.
    let (a, b) = tokio::join!(
        tokio::spawn({
            let engine = engine.clone();
            let app = app.clone();
            async move { engine.suspend(&app, SuspendMode::Pause).await }
        }),
        tokio::spawn({
            let engine = engine.clone();
            let app = app.clone();
            async move { engine.observe(&app).await }
        }),
    );
    a.expect("task").expect("pause");
    b.expect("task").expect("observe");
    assert_eq!(observe(&engine, &app).await, Observed::Paused);
    engine.resume(&app).await.expect("resume");
    assert_eq!(observe(&engine, &app).await, Observed::Running);
    assert_eq!(IMAGE, inspect(&name, "{{.Config.Image}}"));
}
