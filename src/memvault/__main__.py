from memvault.cli.app import run

run()
