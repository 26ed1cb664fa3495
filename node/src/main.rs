//! `spinbench-node`: the node's commands. `density` (what deploy/density.sh runs)
//! starts N `hello` pods through CRI on spinbench's shim and N on runc, on a node
//! of its own for each, and writes density.json, density.md and density.svg.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use spinbench_node::config::{INPROCESS_HANDLER, RUNC_HANDLER, SPINBENCH_HANDLER, ShimScope};
use spinbench_node::density::{self, Subject};
use spinbench_node::images::Repo;
use spinbench_node::report::{self, Density};
use spinbench_node::{Node, NodeOptions, PodSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Parser)]
#[command(about = "A Kubernetes node on this machine through containerd's CRI")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// N hello pods through CRI, on spinbench's shim and on runc: memory, start
    /// latency and idle CPU per pod as N grows.
    Density(DensityArgs),
}

#[derive(clap::Args)]
struct DensityArgs {
    /// The pod counts measured, in increasing order.
    #[arg(long, value_delimiter = ',', default_value = "10,100,250,500")]
    counts: Vec<usize>,
    /// The subjects: `spinbench` (the wasm hello, Spin's artifact, on the
    /// `spinbench` handler: the container design), `spinbench-inprocess` (the
    /// in-process design, a shim per pod), `spinbench-node` (the in-process
    /// design, one shim for the node) and `runc` (the static native hello).
    #[arg(long, value_delimiter = ',', default_value = "spinbench,runc")]
    subjects: Vec<String>,
    /// Where `density-<timestamp>/` is written.
    #[arg(long, default_value = "results")]
    results_dir: PathBuf,
    /// Seconds the pods settle before each count is measured.
    #[arg(long, default_value_t = 5)]
    settle_s: u64,
    /// Seconds idle CPU is read over.
    #[arg(long, default_value_t = 10)]
    idle_s: u64,
    /// Stop starting pods below this much available memory (MiB).
    #[arg(long, default_value_t = 3072)]
    floor_mib: u64,
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Density(args) => density_run(&args),
    }
}

/// The repository's builds the run needs (run from the repository's root).
struct Builds {
    root: PathBuf,
    spinbench: PathBuf,
    shim_dir: PathBuf,
    pause: PathBuf,
    native: PathBuf,
    hello_wasm: PathBuf,
}

impl Builds {
    fn find() -> Result<Builds> {
        let root = std::env::current_dir()?;
        let triple = host_triple()?;
        let builds = Builds {
            spinbench: root.join("target/release/spinbench"),
            shim_dir: root.join("target/release"),
            pause: root.join(format!("target/{triple}/release/spinbench-pause")),
            native: root.join(format!("target/{triple}/release/hello-native")),
            hello_wasm: root.join("target/wasm32-wasip2/release/hello.wasm"),
            root,
        };
        for file in [
            &builds.spinbench,
            &builds.shim_dir.join("containerd-shim-spinbench-v1"),
            &builds.pause,
            &builds.native,
            &builds.hello_wasm,
        ] {
            if !file.is_file() {
                bail!("{} is missing: run `make build` first", file.display());
            }
        }
        Ok(builds)
    }
}

fn host_triple() -> Result<String> {
    let output = std::process::Command::new("rustc").arg("-vV").output()?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(String::from)
        .context("rustc -vV names no host")
}

fn density_run(args: &DensityArgs) -> Result<()> {
    let builds = Builds::find()?;
    let options = density::Options {
        counts: args.counts.clone(),
        settle: Duration::from_secs(args.settle_s),
        idle_window: Duration::from_secs(args.idle_s),
        min_available_kib: args.floor_mib << 10,
    };
    let mut runs = Vec::new();
    for name in &args.subjects {
        // A node of its own per subject: nothing of one is left for the next.
        let node = Node::start(&NodeOptions {
            shim_dir: builds.shim_dir.clone(),
            parent_dir: std::env::temp_dir(),
            shim_scope: if name == "spinbench-node" {
                ShimScope::Node
            } else {
                ShimScope::Pod
            },
            spawn: |mut command| command.spawn(),
        })?;
        let subject = subject(&node, &builds, name)?;
        eprintln!("{}: {}", subject.name, subject.label);
        runs.push(density::run(&node, &subject, &options)?);
    }
    let density = Density {
        versions: versions(&builds),
        runs,
    };
    let dir = args.results_dir.join(format!(
        "density-{}",
        String::from_utf8_lossy(
            &std::process::Command::new("date")
                .args(["-u", "+%Y%m%d-%H%M%S"])
                .output()?
                .stdout
        )
        .trim()
    ));
    report::write(&density, &dir)?;
    print!("{}", report::markdown(&density));
    println!("density figures: {}", dir.join("density.md").display());
    Ok(())
}

fn subject(node: &Node, builds: &Builds, name: &str) -> Result<Subject> {
    let repo = Repo {
        root: &builds.root,
        spinbench: &builds.spinbench,
    };
    repo.push_pause(node, &builds.pause)?;
    let wasm = |handler: &str, label: &str| -> Result<Subject> {
        let app = hello_app(node.dir(), &builds.hello_wasm)?;
        let image = repo.push_artifact(node, &app, "hello:artifact")?;
        let handler = handler.to_string();
        Ok(Subject {
            name: name.into(),
            label: format!(
                "the wasm `hello` (Spin's OCI artifact) on the `{handler}` handler: {label}"
            ),
            pod: Box::new(move |i| PodSpec {
                name: format!("hello-{i}"),
                handler: handler.clone(),
                image: image.clone(),
                command: vec!["/".into()],
                env: vec![("SPIN_HTTP_LISTEN_ADDR".into(), "0.0.0.0:80".into())],
                ..PodSpec::default()
            }),
        })
    };
    match name {
        "spinbench" => wasm(
            SPINBENCH_HANDLER,
            "the container design (runwasi's zygote, youki containers, the pause process)",
        ),
        "spinbench-inprocess" => wasm(
            INPROCESS_HANDLER,
            "the in-process design, one shim process per pod",
        ),
        "spinbench-node" => wasm(
            INPROCESS_HANDLER,
            "the in-process design, one shim process for the node (SPINBENCH_SHIM_SCOPE=node)",
        ),
        "runc" => {
            let image = repo.push_file(node, &builds.native, "hello:native")?;
            Ok(Subject {
                name: name.into(),
                label: "the static native `hello-native` on runc".into(),
                pod: Box::new(move |i| PodSpec {
                    name: format!("hello-{i}"),
                    handler: RUNC_HANDLER.into(),
                    image: image.clone(),
                    args: vec!["--listen".into(), "0.0.0.0:80".into()],
                    ..PodSpec::default()
                }),
            })
        }
        other => {
            bail!("no subject {other:?}: spinbench, spinbench-inprocess, spinbench-node or runc")
        }
    }
}

/// `hello` as an app of its own: the one-component app the comparison runs.
fn hello_app(dir: &Path, wasm: &Path) -> Result<PathBuf> {
    let app = dir.join("hello-app");
    std::fs::create_dir_all(&app)?;
    std::fs::copy(wasm, app.join("hello.wasm"))?;
    let manifest = app.join("spin.toml");
    std::fs::write(
        &manifest,
        "spin_manifest_version = 2\n[application]\nname = \"hello\"\n\
         [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
         [component.hello]\nsource = \"hello.wasm\"\n",
    )?;
    Ok(manifest)
}

fn versions(builds: &Builds) -> Vec<String> {
    let run = |program: &Path, arg: &str| {
        std::process::Command::new(program)
            .arg(arg)
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    vec![
        run(Path::new("containerd"), "--version"),
        run(Path::new("runc"), "--version"),
        run(&builds.shim_dir.join("containerd-shim-spinbench-v1"), "-v"),
    ]
}
