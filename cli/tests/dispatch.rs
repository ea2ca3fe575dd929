//! `hsakmt dispatch` end to end over the simulator: the project's kernels run through the ISA
//! interpreter with their buffers printed, and every kind of bad input is refused with its
//! reason before anything is dispatched.

use std::process::{Command, Output};

use serde_json::Value;

fn object(set: &str, processor: &str) -> String {
    format!("{}/../kernels/objects/{set}/{processor}.co", env!("CARGO_MANIFEST_DIR"))
}

fn hsakmt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .arg("dispatch")
        .args(args)
        .env_remove("HSAKMT_DRIVER")
        .env_remove("HSA_OVERRIDE_GFX_VERSION")
        .output()
        .expect("run hsakmt")
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = hsakmt(&all);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn fails<S: AsRef<str>>(args: &[S], why: &str) {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let out = hsakmt(&args);
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(why), "{args:?}: {err}");
}

fn values(doc: &Value, buffer: usize) -> Vec<u64> {
    doc["buffers"][buffer]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn vector_add_on_every_simulated_processor() {
    for (profile, gfx) in [("mi308x-8gpu-cpx", "gfx942"), ("mi25-vega10-rocm18", "gfx900")] {
        let co = object("test", gfx);
        let doc = json(&[
            &co,
            "vector_add",
            "--grid",
            "100",
            "--workgroup",
            "64",
            "--arg",
            "buf:u32:100:iota",
            "--arg",
            "buf:u32:100:fill=1000",
            "--arg",
            "buf:u32:100",
            "--arg",
            "u32:90",
            "--sim",
            profile,
        ]);
        assert_eq!(doc["driver"], "sim");
        assert_eq!(doc["kernel"], "vector_add");
        assert!(doc["agent"].as_str().unwrap().contains(gfx), "{doc}");
        assert_eq!(doc["buffers"].as_array().unwrap().len(), 3);
        assert_eq!(doc["buffers"][2]["name"], "c");
        assert_eq!(doc["buffers"][2]["type"], "u32");
        // c[i] = a[i] + b[i] for i < n = 90; the rest stays 0.
        let c = values(&doc, 2);
        let want: Vec<u64> = (0..100).map(|i| if i < 90 { 1000 + i } else { 0 }).collect();
        assert_eq!(c, want, "{profile}");
    }
}

#[test]
fn scratch_relocations_and_2d_grids() {
    let co = object("test", "gfx942");
    let sim = ["--sim", "mi308x-8gpu-cpx"];
    // private_array: out[i] = a[v % 64] + a[(v / 64) % 64], a[j] = v + 7j (scratch).
    let mut args = vec![&co[..], "private_array", "--grid", "130", "--workgroup", "64"];
    args.extend(["--arg", "buf:u32:130:iota", "--arg", "buf:u32:130", "--arg", "u32:130"]);
    args.extend(sim);
    let doc = json(&args);
    let want: Vec<u64> = (0..130).map(|v| (v + 7 * (v % 64)) + (v + 7 * ((v / 64) % 64))).collect();
    assert_eq!(values(&doc, 1), want);
    // lookup_table: R_AMDGPU_RELATIVE64 pointers, out[i] = (in[i] % 4 + 1) * 1000 + i % 8.
    let mut args = vec![&co[..], "lookup_table", "--grid", "16", "--workgroup", "16"];
    args.extend(["--arg", "buf:u32:16:iota", "--arg", "buf:u32:16", "--arg", "u32:16"]);
    args.extend(sim);
    let doc = json(&args);
    let want: Vec<u64> = (0..16).map(|i| (i % 4 + 1) * 1000 + i % 8).collect();
    assert_eq!(values(&doc, 1), want);
    // local_size_2d over a 2-D grid with partial groups: the enqueued size everywhere.
    let mut args = vec![&co[..], "local_size_2d", "--grid", "5,3", "--workgroup", "4,2"];
    args.extend(["--arg", "buf:u32:15", "--arg", "u32:5", "--arg", "u32:3"]);
    args.extend(sim);
    let doc = json(&args);
    assert_eq!(values(&doc, 0), vec![4 | 2 << 16; 15]);
}

#[test]
fn float_and_64_bit_buffers_print_their_type() {
    let co = object("test", "gfx942");
    let doc = json(&[
        &co,
        "uint_division64",
        "--grid",
        "4",
        "--workgroup",
        "4",
        "--arg",
        "buf:u64:4:fill=0xffffffffffffffff",
        "--arg",
        "buf:u64:4:iota",
        "--arg",
        "buf:u64:4",
        "--arg",
        "buf:u64:4",
        "--arg",
        "u32:4",
        "--sim",
        "mi308x-8gpu-cpx",
    ]);
    // a / b and a % b with b = 0 giving 0, 0.
    let (q, r) = (values(&doc, 2), values(&doc, 3));
    assert_eq!(q, [0, u64::MAX, u64::MAX / 2, u64::MAX / 3]);
    assert_eq!(r, [0, 0, 1, 0]);
    assert_eq!(doc["buffers"][2]["type"], "u64");
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let co = object("test", "gfx942");
    let sim = ["--sim", "mi308x-8gpu-cpx"];
    let with = |extra: &[&'static str]| -> Vec<String> {
        let mut v = vec![co.clone()];
        v.extend(extra.iter().chain(&sim).map(|s| (*s).to_string()));
        v
    };
    fails(&with(&["nope", "--grid", "1", "--workgroup", "1"]), "no kernel `nope`");
    fails(
        &with(&["vector_add", "--grid", "4", "--workgroup", "4", "--arg", "buf:u32:4"]),
        "takes 4 argument(s), 1 given",
    );
    fails(
        &with(&[
            "vector_add",
            "--grid",
            "4",
            "--workgroup",
            "4",
            "--arg",
            "u32:1",
            "--arg",
            "buf:u32:4",
            "--arg",
            "buf:u32:4",
            "--arg",
            "u32:4",
        ]),
        "argument 0 (a: uint*, 8 bytes) takes a buffer",
    );
    fails(
        &with(&[
            "vector_add",
            "--grid",
            "4",
            "--workgroup",
            "4",
            "--arg",
            "buf:u32:4",
            "--arg",
            "buf:u32:4",
            "--arg",
            "buf:u32:4",
            "--arg",
            "u64:4",
        ]),
        "takes an integer of 4 bytes",
    );
    let four = ["--arg", "buf:u32:4", "--arg", "buf:u32:4", "--arg", "buf:u32:4", "--arg", "u32:4"];
    let mut big = vec!["vector_add", "--grid", "4", "--workgroup", "2048"];
    big.extend(four);
    fails(&with(&big), "at most 1024");
    fails(&with(&["vector_add", "--grid", "4", "--workgroup", "4", "--arg", "u32:x"]), "u32");
    // lds_reduce requires work-groups of 256.
    fails(
        &with(&[
            "lds_reduce",
            "--grid",
            "512",
            "--workgroup",
            "64",
            "--arg",
            "buf:u32:512",
            "--arg",
            "buf:u32:4",
            "--arg",
            "u32:512",
        ]),
        "requires work-group size 256",
    );
    // A foreign target, a file that is not a code object, a missing file.
    let gfx900 = object("test", "gfx900");
    let mut foreign = vec![&gfx900[..], "vector_add", "--grid", "4", "--workgroup", "4"];
    foreign.extend(four);
    foreign.extend(sim);
    fails(&foreign, "the code object is for gfx900");
    let toml = format!("{}/Cargo.toml", env!("CARGO_MANIFEST_DIR"));
    fails(&[&toml, "k", "--grid", "1", "--workgroup", "1"], "not a loadable code object");
    fails(&["/nonexistent.co", "k", "--grid", "1", "--workgroup", "1"], "/nonexistent.co");
    fails(&with(&["vector_add", "--workgroup", "1"]), "--grid");
}

#[test]
fn the_simulator_bounds_the_grid() {
    let co = object("test", "gfx942");
    fails(
        &[
            &co,
            "vector_add",
            "--grid",
            "5000,5000",
            "--workgroup",
            "64",
            "--arg",
            "buf:u32:4",
            "--arg",
            "buf:u32:4",
            "--arg",
            "buf:u32:4",
            "--arg",
            "u32:4",
            "--sim",
            "mi308x-8gpu-cpx",
        ],
        "the simulator interprets",
    );
}
