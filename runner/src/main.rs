//! `spinbench`: hosts the function set's components the way Spin does and
//! compares them with native builds of the same code.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "spinbench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the manifest's components over HTTP, one fresh instance per request.
    Serve,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve => Ok(()),
    }
}
