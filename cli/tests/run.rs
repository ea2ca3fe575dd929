//! `hsakmt run` end to end over the simulator: results verified on every profile that has a
//! usable GPU, several GPUs, the JSON contract, and clean failures (injected ioctl faults,
//! profiles without GPUs, bad arguments).

use std::process::{Command, Output};

use serde_json::Value;

fn hsakmt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(args)
        .env_remove("HSAKMT_DRIVER")
        .output()
        .expect("run hsakmt")
}

fn json(args: &[&str]) -> Value {
    let out = hsakmt(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn runs_and_verifies_on_every_profile_with_a_gpu() {
    for (profile, gfx) in [("mi308x-8gpu-cpx", "gfx942"), ("mi25-vega10-rocm18", "gfx900")] {
        let doc = json(&["run", "--sim", profile, "--iterations", "300", "--json"]);
        assert_eq!(doc["driver"], "sim");
        assert_eq!(doc["iterations"], 300);
        assert_eq!(doc["verified"], true, "{profile}: {doc}");
        // The simulator interprets the control_step code object for the agent's processor.
        assert_eq!(doc["compute"], format!("code object {gfx}"));
        let lat = &doc["latency_ns"];
        let (p50, p99, max) = (
            lat["p50"].as_f64().unwrap(),
            lat["p99"].as_f64().unwrap(),
            lat["max"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{lat}");
        assert!(doc["throughput_per_s"].as_f64().unwrap() > 0.0);
        // The steady state: neither the library and the tool nor the simulated kernel (counted
        // apart) allocate per iteration. The whole process's figure includes the set-up and the
        // simulated engines' threads (held at 0 in the --step test below).
        let heap = &doc["heap_allocations_per_iteration"];
        assert_eq!(heap["library_steady_state"], 0.0, "{profile}: {heap}");
        assert_eq!(heap["simulated_kernel_steady_state"], 0.0, "{profile}: {heap}");
        assert!(heap["process"].as_f64().unwrap() >= 0.0, "{profile}: {heap}");
        assert!(doc["device_calls_per_iteration"].as_f64().unwrap() > 0.0, "{doc}");
    }
}

#[test]
fn the_branch_real_hardware_takes_runs_over_the_simulator_as_a_plain_kfd() {
    // No host kernels: the copies go through SDMA and the compute step is the control_step
    // code object loaded through the KFD driver, as on a real GPU (here interpreted); verified
    // end to end.
    let doc =
        json(&["run", "--sim", "mi308x-8gpu-cpx", "--as-kfd", "--iterations", "300", "--json"]);
    assert_eq!(doc["driver"], "kfd", "{doc}");
    assert_eq!(doc["verified"], true, "{doc}");
    assert_eq!(doc["iterations"], 300);
    assert_eq!(doc["compute"], "code object gfx942");
    assert!(doc["platform"].as_str().unwrap().contains("as a plain KFD device"), "{doc}");
    let heap = &doc["heap_allocations_per_iteration"];
    assert_eq!(heap["library_steady_state"], 0.0, "{doc}");
    assert_eq!(heap["simulated_kernel_steady_state"], 0.0, "{doc}");
}

#[test]
fn step_runs_the_engines_on_the_loop_thread_and_reports_the_library_time() {
    for extra in [&[][..], &["--sim", "mi308x-8gpu-cpx", "--as-kfd"][..]] {
        let mut args = vec!["run", "--step", "--iterations", "400", "--json"];
        args.extend_from_slice(extra);
        let doc = json(&args);
        assert_eq!(doc["verified"], true, "{doc}");
        assert_eq!(doc["iterations"], 400);
        let (lat, own) = (&doc["latency_ns"], &doc["library_time_ns"]);
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
        assert!(0.0 < f(own, "p50") && f(own, "p50") <= f(own, "p99"), "{own}");
        assert!(f(own, "p99") <= f(own, "p99.9") && f(own, "p99.9") <= f(own, "max"), "{own}");
        // The engines' work is left out: never more than the whole iteration.
        assert!(f(own, "max") <= f(lat, "max"), "{doc}");
        assert!(f(own, "p50") <= f(lat, "p50"), "{doc}");
        // Preempted iterations are counted, never more than ran.
        assert!(doc["preempted_iterations"].as_u64().unwrap() < 400, "{doc}");
        let controls = doc["latency_controls"].to_string();
        assert!(controls.contains("stepped on the loop thread"), "{controls}");
        let heap = &doc["heap_allocations_per_iteration"];
        assert_eq!(heap["library_steady_state"], 0.0, "{heap}");
        assert_eq!(heap["simulated_kernel_steady_state"], 0.0, "{heap}");
        // The engines run on the loop thread here, so their steady state is measured too: the
        // command processor and the ISA interpreter reuse the queue's dispatch storage (waves,
        // register files, LDS, decoded code) and allocate nothing per iteration.
        assert_eq!(heap["simulated_engines_steady_state"], 0.0, "{heap}");
    }
    // gfx900 (buffer scratch, work-item ids in v0-v2) holds it too.
    let doc =
        json(&["run", "--step", "--sim", "mi25-vega10-rocm18", "--iterations", "400", "--json"]);
    assert_eq!(doc["verified"], true, "{doc}");
    assert_eq!(doc["compute"], "code object gfx900");
    let heap = &doc["heap_allocations_per_iteration"];
    assert_eq!(heap["simulated_engines_steady_state"], 0.0, "{heap}");
    // Without --step there is no such figure; the text report shows it with --step.
    let doc = json(&["run", "--sim", "mi308x-8gpu-cpx", "--iterations", "50", "--json"]);
    assert!(doc.get("library_time_ns").is_none(), "{doc}");
    let heap = &doc["heap_allocations_per_iteration"];
    assert!(heap.get("simulated_engines_steady_state").is_none(), "{heap}");
    let out = hsakmt(&["run", "--step", "--iterations", "50"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("library     p50"));
}

#[test]
fn spreads_over_several_gpus() {
    let doc = json(&["run", "--iterations", "400", "--gpus", "4", "--block", "1024", "--json"]);
    assert_eq!(doc["gpus"], 4);
    assert_eq!(doc["agents"].as_array().unwrap().len(), 4);
    assert_eq!(doc["verified"], true);
    let doc = json(&[
        "run",
        "--sim",
        "mi25-vega10-rocm18",
        "--iterations",
        "20",
        "--gpus",
        "all",
        "--json",
    ]);
    assert_eq!(doc["gpus"], 1);
}

#[test]
fn default_run_falls_back_to_the_simulator_and_says_why() {
    let out = hsakmt(&["run", "--iterations", "50"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if !std::path::Path::new("/dev/kfd").exists() {
        assert!(out.status.success(), "{err}");
        assert!(err.contains("/dev/kfd does not exist"), "{err}");
        assert!(err.contains("driver `sim`"), "{err}");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.contains("every result checked out"), "{report}");
    }
}

#[test]
fn failures_exit_non_zero_with_a_clear_message() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "--iterations", "100", "--inject", "WAIT_EVENTS=EIO@1"],
            "WAIT_EVENTS failed: EIO",
        ),
        (
            &["run", "--iterations", "10", "--inject", "CREATE_QUEUE=ENOMEM@1"],
            "CREATE_QUEUE failed: ENOMEM",
        ),
        (
            &["run", "--iterations", "10", "--inject", "ALLOC_MEMORY_OF_GPU=ENOSPC@2"],
            "ALLOC_MEMORY_OF_GPU failed",
        ),
        (&["run", "--sim", "mi210-8gpu-2hive", "--iterations", "5"], "no agent to run the loop on"),
        (&["run", "--iterations", "5", "--gpus", "99"], "has only 32 agent(s)"),
        (&["run", "--block", "6"], "multiple of 4"),
    ];
    for (args, want) in cases {
        let out = hsakmt(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} must fail");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(["run", "--iterations", "5"])
        .env("HSAKMT_DRIVER", "cuda")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("HSAKMT_DRIVER=\"cuda\" names no driver")
    );
}

#[test]
fn the_host_driver_runs_the_same_loop() {
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(["run", "--iterations", "200", "--json"])
        .env("HSAKMT_DRIVER", "host")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["driver"], "host");
    assert_eq!(doc["platform"], "host CPU");
    assert_eq!(doc["compute"], "registered kernel");
    assert_eq!(doc["verified"], true);
}

#[test]
fn an_overridden_gfx_version_runs_that_processors_object() {
    // HSA_OVERRIDE_GFX_VERSION=9.0.0 makes the gfx942 agents gfx900 to the loader: the gfx900
    // object is loaded, and the interpreter runs it on the (gfx9-family) simulated agent.
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(["run", "--sim", "mi308x-8gpu-cpx", "--iterations", "50", "--json"])
        .env_remove("HSAKMT_DRIVER")
        .env("HSA_OVERRIDE_GFX_VERSION", "9.0.0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compute"], "code object gfx900");
    assert_eq!(doc["verified"], true);
}

#[test]
fn a_processor_without_a_code_object_falls_back_to_the_barrier() {
    // gfx1010: hsakmt carries no object for it, so the step is a barrier and blocks come back
    // unchanged (verified as such).
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(["run", "--sim", "mi308x-8gpu-cpx", "--iterations", "20", "--json"])
        .env_remove("HSAKMT_DRIVER")
        .env("HSA_OVERRIDE_GFX_VERSION", "10.1.0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compute"], "barrier (no code object for gfx1010)");
    assert_eq!(doc["verified"], true);
}

#[test]
fn a_kernel_that_stops_its_queue_fails_the_run_with_the_reason() {
    // gfx1100 makes the loader pick a wave32 object, which the gfx9 agent (the interpreter)
    // refuses: the queue goes into error and the run says so at once, not after a timeout.
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(["run", "--sim", "mi308x-8gpu-cpx", "--iterations", "5"])
        .env_remove("HSAKMT_DRIVER")
        .env("HSA_OVERRIDE_GFX_VERSION", "11.0.0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("went into error") && err.contains("the simulator: exception"), "{err}");
}
