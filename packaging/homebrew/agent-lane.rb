# Homebrew formula for a tap: `brew tap OWNER/agent-lane`, then
# `brew install --HEAD agent-lane` and `brew services start agent-lane`.
# packaging/homebrew/README.md says how to publish it. The service block is
# the LaunchAgent of launchd/dev.agent-lane.agent-laned.plist.in, as far as
# Homebrew's service DSL can say it (the README lists the differences);
# tests/regress/packaging.sh checks that they agree.
class AgentLane < Formula
  desc "Disposable Lima VMs for coding agents, run by a per-user daemon"
  homepage "https://github.com/agent-lane/agent-lane"
  head "https://github.com/agent-lane/agent-lane.git", branch: "main"

  depends_on "pkg-config" => :build
  depends_on "libarchive"
  depends_on "libevent"
  depends_on "libpsl"
  depends_on "lima"
  depends_on "protobuf-c"
  depends_on "sqlite"

  def install
    # The Makefile finds keg-only libarchive and sqlite through brew --prefix.
    system "make", "PREFIX=#{prefix}"
    system "make", "install", "PREFIX=#{prefix}"
  end

  service do
    run [opt_bin/"agent-laned",
         "--socket", "#{Dir.home}/.agent-lane/run/agent-laned.sock",
         "--state-dir", "#{Dir.home}/.agent-lane", "--log-file-only"]
    run_type :immediate
    # limactl is in Homebrew's bin, which a launchd job's PATH lacks.
    environment_variables PATH: std_service_path_env
    keep_alive true
    # Standard, not Background: copies stream through the daemon.
    process_type :standard
    # Start-up failures only: the daemon's log is ~/.agent-lane/log/agent-laned.log
    # (`agent-lanectl logs`), and --log-file-only keeps stderr quiet after that.
    log_path var/"log/agent-laned.log"
    error_log_path var/"log/agent-laned.log"
  end

  def caveats
    <<~EOS
      Start the daemon now and at every login:
        brew services start agent-lane
      or run it in the foreground:
        agent-laned --socket ~/.agent-lane/run/agent-laned.sock
      Use `brew services`, or `agent-lanectl daemon install`, not both:
      they load the same daemon under two launchd labels.
    EOS
  end

  test do
    assert_match(/^agent-lanectl \d+\.\d+\.\d+$/, shell_output("#{bin}/agent-lanectl -V"))
    assert_match "usage: agent-lanectl create", shell_output("#{bin}/agent-lanectl create --help")
    # No daemon is running in the test sandbox: exit 3, said plainly.
    output = shell_output("#{bin}/agent-lanectl --socket #{testpath}/s.sock " \
                          "daemon status --no-load", 3)
    assert_match "not answering", output
  end
end
