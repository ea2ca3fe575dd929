//! The committed code objects parse, and what the parser reports matches LLVM's tools.

use std::format;
use std::vec;
use std::vec::Vec;

use super::expected::{ARGS, DIRECTIVES, OBJECTS};
use super::{object, rd32, rd64};
use crate::code_object::descriptor::{PgmRsrc3, WorkitemIds};
use crate::code_object::metadata::AddressSpace;
use crate::code_object::target::AgentFeature;
use crate::code_object::*;
use crate::topology::GfxVersion;

#[test]
fn every_committed_object_parses_with_its_kernel_set() {
    assert_eq!(hsakmt_kernels::all().len(), OBJECTS.len(), "every object has expectations");
    for o in hsakmt_kernels::all() {
        let co = CodeObject::parse(o.bytes).unwrap_or_else(|e| panic!("{}: {e}", o.path));
        assert_eq!(co.version().number(), o.version, "{}", o.path);
        assert_eq!(co.target().processor.name(), Some(o.processor), "{}", o.path);
        let names: Vec<&str> = co.kernels().map(|k| k.unwrap().name()).collect();
        assert_eq!(names, o.set.kernels(), "{}", o.path);
        for name in o.set.kernels() {
            assert_eq!(co.kernel(name).unwrap().name(), *name);
        }
    }
}

#[test]
fn headers_segments_and_relocations_match_llvm_readelf() {
    for e in OBJECTS {
        let bytes = object(e.path).bytes;
        let co = CodeObject::parse(bytes).unwrap();
        let version = match e.abi_version {
            2 => CodeObjectVersion::V4,
            3 => CodeObjectVersion::V5,
            _ => CodeObjectVersion::V6,
        };
        assert_eq!(co.version(), version, "{}", e.path);
        let t = co.target();
        assert_eq!(t.processor, Processor((e.e_flags & 0xff) as u8), "{}", e.path);
        assert_eq!(t.processor.name(), Some(e.processor), "{}", e.path);
        assert_eq!((t.xnack, t.sramecc), (e.xnack, e.sramecc), "{}", e.path);
        assert_eq!(t.generic_version, e.generic_version, "{}", e.path);
        assert_eq!(co.metadata().target, e.metadata_target, "{}", e.path);
        assert_eq!(co.metadata().version, e.metadata_version, "{}", e.path);
        assert_eq!(format!("amdgcn-amd-amdhsa--{t}"), e.metadata_target, "{}", e.path);
        // The image spans the LOAD segments; its alignment is theirs.
        let end = e.loads.iter().map(|l| l.0 + l.2).max().unwrap();
        assert_eq!(co.image_size(), end, "{}", e.path);
        assert_eq!(co.image_align(), e.loads.iter().map(|l| l.4).max().unwrap(), "{}", e.path);
        let segments: Vec<_> = co.segments().collect();
        assert_eq!(segments.len(), e.loads.len(), "{}", e.path);
        for (s, &(vaddr, filesz, memsz, flags, _, offset)) in segments.iter().zip(e.loads) {
            assert_eq!((s.vaddr, s.file_bytes.len() as u64, s.mem_size), (vaddr, filesz, memsz));
            assert_eq!(s.zero_fill(), memsz - filesz);
            assert_eq!(s.file_bytes, &bytes[offset as usize..(offset + filesz) as usize]);
            let f = s.flags;
            let text = format!(
                "{}{}{}",
                if f.read { "R" } else { "" },
                if f.write { "W" } else { "" },
                if f.execute { "E" } else { "" }
            );
            assert_eq!(text, flags, "{}", e.path);
        }
        let relocations: Vec<_> = co.relocations().map(|r| (r.offset, r.addend)).collect();
        assert_eq!(relocations, e.relocations, "{}", e.path);
    }
}

#[test]
fn kernels_match_llvm_readelf() {
    for e in OBJECTS {
        let co = CodeObject::parse(object(e.path).bytes).unwrap();
        assert_eq!(co.metadata().kernel_count() as usize, e.kernels.len(), "{}", e.path);
        for x in e.kernels {
            let k = co.kernel(x.name).unwrap();
            let m = k.metadata;
            let at = format!("{} {}", e.path, x.name);
            assert_eq!((k.descriptor_offset, k.entry_offset), (x.kd, x.entry), "{at}");
            assert_eq!(m.symbol, format!("{}.kd", x.name), "{at}");
            assert_eq!(m.kernarg_segment_size, x.kernarg_segment_size, "{at}");
            assert_eq!(m.kernarg_segment_align, x.kernarg_segment_align, "{at}");
            assert_eq!(m.group_segment_fixed_size, x.group_segment_fixed_size, "{at}");
            assert_eq!(m.private_segment_fixed_size, x.private_segment_fixed_size, "{at}");
            assert_eq!(m.wavefront_size, x.wavefront_size, "{at}");
            assert_eq!(
                (m.sgpr_count, m.vgpr_count, m.agpr_count),
                (x.sgpr_count, x.vgpr_count, x.agpr_count),
                "{at}"
            );
            assert_eq!(m.max_flat_workgroup_size, x.max_flat_workgroup_size, "{at}");
            assert_eq!(m.uses_dynamic_stack, x.uses_dynamic_stack, "{at}");
            assert_eq!(
                m.workgroup_processor_mode,
                x.workgroup_processor_mode.map(|v| v != 0),
                "{at}"
            );
            assert_eq!(m.reqd_workgroup_size, x.reqd_workgroup_size, "{at}");
            assert_eq!(m.language, Some("OpenCL C"), "{at}");
            assert_eq!(m.args.len(), x.args, "{at}");
            let d = k.descriptor;
            let [kernarg, group, private, rsrc1, rsrc2, rsrc3, props] = x.descriptor;
            assert_eq!(
                (d.kernarg_size, d.group_segment_fixed_size, d.private_segment_fixed_size),
                (kernarg, group, private),
                "{at}"
            );
            assert_eq!((d.pgm_rsrc1.raw, d.pgm_rsrc2.raw), (rsrc1, rsrc2), "{at}");
            let raw3 = match d.pgm_rsrc3 {
                PgmRsrc3::None { raw }
                | PgmRsrc3::Gfx90a { raw, .. }
                | PgmRsrc3::Gfx10Plus { raw, .. } => raw,
            };
            assert_eq!(raw3, rsrc3, "{at}");
            assert_eq!(
                u32::from(d.code_properties.raw) | u32::from(d.kernarg_preload.length_dwords) << 16,
                props,
                "{at}"
            );
            // The descriptor and the metadata agree on the segment sizes.
            assert_eq!(d.kernarg_size, m.kernarg_segment_size, "{at}");
            assert_eq!(d.group_segment_fixed_size, m.group_segment_fixed_size, "{at}");
            assert_eq!(d.private_segment_fixed_size, m.private_segment_fixed_size, "{at}");
            assert_eq!(d.code_properties.enable_wavefront_size32, m.wavefront_size == 32, "{at}");
        }
    }
}

#[test]
fn arguments_match_llvm_readelf() {
    let mut checked = 0;
    for e in OBJECTS {
        let co = CodeObject::parse(object(e.path).bytes).unwrap();
        let set = e.path.split('/').next().unwrap();
        let version = if co.version() == CodeObjectVersion::V4 { 4 } else { 5 };
        for k in co.kernels().map(Result::unwrap) {
            let (_, _, _, expected) = ARGS
                .iter()
                .find(|(s, v, n, _)| *s == set && *v == version && *n == k.name())
                .unwrap_or_else(|| panic!("{} {}", e.path, k.name()));
            let args: Vec<_> = k.metadata.args.iter().collect();
            assert_eq!(args.len(), expected.len(), "{} {}", e.path, k.name());
            for (a, &(name, type_name, offset, size, kind, space, is_const)) in
                args.iter().zip(*expected)
            {
                assert_eq!(
                    (a.name, a.type_name, a.offset, a.size),
                    (name, type_name, offset, size)
                );
                assert_eq!(a.value_kind_name, kind);
                assert_eq!(a.value_kind, ValueKind::from_name(kind));
                assert_ne!(a.value_kind, ValueKind::Unknown);
                assert_eq!(a.address_space.is_some(), space.is_some());
                if space == Some("global") {
                    assert_eq!(a.address_space, Some(AddressSpace::Global));
                }
                assert_eq!(a.is_const, is_const);
                checked += 1;
            }
            let explicit = expected.iter().filter(|a| !a.4.starts_with("hidden_")).count();
            assert_eq!(k.metadata.args.explicit_count() as usize, explicit);
        }
    }
    assert!(checked > 400, "{checked}");
}

/// The value of an `.amdhsa_*` directive computed from the decoded descriptor.
fn directive(d: &KernelDescriptor, name: &str) -> u64 {
    let (r1, r2, p) = (d.pgm_rsrc1, d.pgm_rsrc2, d.code_properties);
    fn b(v: impl Into<u64>) -> u64 {
        v.into()
    }
    match name {
        "amdhsa_group_segment_fixed_size" => b(d.group_segment_fixed_size),
        "amdhsa_private_segment_fixed_size" => b(d.private_segment_fixed_size),
        "amdhsa_kernarg_size" => b(d.kernarg_size),
        "amdhsa_accum_offset" => match d.pgm_rsrc3 {
            PgmRsrc3::Gfx90a { accum_offset, .. } => (b(accum_offset) + 1) * 4,
            other => panic!("accum_offset on {other:?}"),
        },
        "amdhsa_tg_split" => match d.pgm_rsrc3 {
            PgmRsrc3::Gfx90a { tg_split, .. } => b(tg_split),
            other => panic!("tg_split on {other:?}"),
        },
        "amdhsa_float_round_mode_32" => b(r1.float_round_mode_32),
        "amdhsa_float_round_mode_16_64" => b(r1.float_round_mode_16_64),
        "amdhsa_float_denorm_mode_32" => b(r1.float_denorm_mode_32),
        "amdhsa_float_denorm_mode_16_64" => b(r1.float_denorm_mode_16_64),
        "amdhsa_dx10_clamp" => b(r1.enable_dx10_clamp),
        "amdhsa_ieee_mode" => b(r1.enable_ieee_mode),
        "amdhsa_fp16_overflow" => b(r1.fp16_ovfl),
        "amdhsa_system_sgpr_private_segment_wavefront_offset" | "amdhsa_enable_private_segment" => {
            b(r2.enable_private_segment)
        }
        "amdhsa_system_sgpr_workgroup_id_x" => b(r2.enable_sgpr_workgroup_id_x),
        "amdhsa_system_sgpr_workgroup_id_y" => b(r2.enable_sgpr_workgroup_id_y),
        "amdhsa_system_sgpr_workgroup_id_z" => b(r2.enable_sgpr_workgroup_id_z),
        "amdhsa_system_sgpr_workgroup_info" => b(r2.enable_sgpr_workgroup_info),
        "amdhsa_system_vgpr_workitem_id" => match r2.enable_vgpr_workitem_id {
            WorkitemIds::X => 0,
            WorkitemIds::Xy => 1,
            WorkitemIds::Xyz => 2,
            WorkitemIds::Undefined => 3,
        },
        "amdhsa_exception_fp_ieee_invalid_op" => b(r2.enable_exceptions & 1),
        "amdhsa_exception_fp_denorm_src" => b(r2.enable_exceptions >> 1 & 1),
        "amdhsa_exception_fp_ieee_div_zero" => b(r2.enable_exceptions >> 2 & 1),
        "amdhsa_exception_fp_ieee_overflow" => b(r2.enable_exceptions >> 3 & 1),
        "amdhsa_exception_fp_ieee_underflow" => b(r2.enable_exceptions >> 4 & 1),
        "amdhsa_exception_fp_ieee_inexact" => b(r2.enable_exceptions >> 5 & 1),
        "amdhsa_exception_int_div_zero" => b(r2.enable_exceptions >> 6 & 1),
        "amdhsa_user_sgpr_private_segment_buffer" => b(p.enable_sgpr_private_segment_buffer),
        "amdhsa_user_sgpr_dispatch_ptr" => b(p.enable_sgpr_dispatch_ptr),
        "amdhsa_user_sgpr_queue_ptr" => b(p.enable_sgpr_queue_ptr),
        "amdhsa_user_sgpr_kernarg_segment_ptr" => b(p.enable_sgpr_kernarg_segment_ptr),
        "amdhsa_user_sgpr_dispatch_id" => b(p.enable_sgpr_dispatch_id),
        "amdhsa_user_sgpr_flat_scratch_init" => b(p.enable_sgpr_flat_scratch_init),
        "amdhsa_user_sgpr_private_segment_size" => b(p.enable_sgpr_private_segment_size),
        "amdhsa_uses_dynamic_stack" => b(p.uses_dynamic_stack),
        other => panic!("directive {other} not mapped"),
    }
}

#[test]
fn descriptors_match_llvm_objdump() {
    for (path, kernel, directives) in DIRECTIVES {
        let co = CodeObject::parse(object(path).bytes).unwrap();
        let d = co.kernel(kernel).unwrap().descriptor;
        for (name, value) in *directives {
            assert_eq!(directive(&d, name), *value, "{path} {kernel} {name}");
        }
    }
    assert!(DIRECTIVES.len() >= 20);
}

#[test]
fn user_sgpr_count_is_the_enabled_user_sgprs() {
    // AMDGPUUsage "Initial Kernel Execution State": private segment buffer 4, dispatch ptr 2,
    // queue ptr 2, kernarg segment ptr 2, dispatch id 2, flat scratch init 2, private segment
    // size 1, then the preloaded kernel arguments.
    for o in hsakmt_kernels::all() {
        let co = CodeObject::parse(o.bytes).unwrap();
        for k in co.kernels().map(Result::unwrap) {
            let p = k.descriptor.code_properties;
            let n = 4 * u8::from(p.enable_sgpr_private_segment_buffer)
                + 2 * u8::from(p.enable_sgpr_dispatch_ptr)
                + 2 * u8::from(p.enable_sgpr_queue_ptr)
                + 2 * u8::from(p.enable_sgpr_kernarg_segment_ptr)
                + 2 * u8::from(p.enable_sgpr_dispatch_id)
                + 2 * u8::from(p.enable_sgpr_flat_scratch_init)
                + u8::from(p.enable_sgpr_private_segment_size)
                + k.descriptor.kernarg_preload.length_dwords;
            // gfx1100 pads the user SGPRs so that they and the work-group id/info SGPRs make
            // 16 (`clang-19 -S` writes `.amdhsa_user_sgpr_count 15` with one work-group id,
            // 14 with two: LLVM's workaround for a GFX11 SGPR initialisation bug).
            let r2 = k.descriptor.pgm_rsrc2;
            let system = u8::from(r2.enable_sgpr_workgroup_id_x)
                + u8::from(r2.enable_sgpr_workgroup_id_y)
                + u8::from(r2.enable_sgpr_workgroup_id_z)
                + u8::from(r2.enable_sgpr_workgroup_info);
            let expected = if o.processor == "gfx1100" { n.max(16 - system) } else { n };
            assert_eq!(k.descriptor.pgm_rsrc2.user_sgpr_count, expected, "{} {}", o.path, k.name());
            // Every project kernel reads its arguments.
            assert!(p.enable_sgpr_kernarg_segment_ptr);
        }
    }
}

#[test]
fn load_into_copies_segments_and_applies_relocations() {
    let co = CodeObject::parse(object("test/gfx942.co").bytes).unwrap();
    let base = 0x7f12_3400_0000u64;
    let mut image = vec![0xa5u8; co.image_size() as usize + 16];
    co.load_into(&mut image, base).unwrap();
    // Bytes past the image are untouched.
    assert!(image[co.image_size() as usize..].iter().all(|b| *b == 0xa5));
    let relocated: Vec<_> = co.relocations().map(|r| r.offset).collect();
    for s in co.segments() {
        let at = s.vaddr as usize;
        let file = &image[at..at + s.file_bytes.len()];
        for (i, (got, want)) in file.iter().zip(s.file_bytes).enumerate() {
            let offset = (at + i) as u64;
            if !relocated.iter().any(|r| (*r..*r + 8).contains(&offset)) {
                assert_eq!(got, want, "segment {} byte {i}", s.index);
            }
        }
        let fill = &image[at + s.file_bytes.len()..at + s.mem_size as usize];
        assert!(fill.iter().all(|b| *b == 0), "segment {} zero fill", s.index);
    }
    // `tables[t]` points at `table<t>`, whose first word is (t + 1) * 1000 (test.cl).
    assert_eq!(relocated.len(), 4);
    for (t, r) in co.relocations().enumerate() {
        let pointer = rd64(&image, r.offset as usize);
        assert_eq!(pointer, base + r.addend as u64);
        assert_eq!(rd32(&image, (pointer - base) as usize), (t as u32 + 1) * 1000);
    }
    // The descriptor is where the kernel object points, the code where the entry does.
    let k = co.kernel("lookup_table").unwrap();
    assert_eq!(k.descriptor_address(base), Some(base + k.descriptor_offset));
    assert_eq!(k.entry_address(base), Some(base + k.entry_offset));
    let entry = co.segments().find(|s| s.flags.execute).unwrap();
    assert!((entry.vaddr..entry.vaddr + entry.mem_size).contains(&k.entry_offset));
}

#[test]
fn target_check_against_agents() {
    let agent = |major, minor, stepping| AgentTarget::new(GfxVersion::new(major, minor, stepping));
    for o in hsakmt_kernels::all().iter().filter(|o| o.version == 5) {
        let co = CodeObject::parse(o.bytes).unwrap();
        let own = co.target().processor.gfx().unwrap();
        assert_eq!(co.check_target(&AgentTarget::new(own)), Ok(()));
        let other = if own == GfxVersion::new(9, 0, 0) { agent(9, 4, 2) } else { agent(9, 0, 0) };
        let err = co.check_target(&other).unwrap_err();
        assert_eq!(err, CodeObjectError::WrongTarget { object: co.target(), agent: other });
        // The message names both.
        let text = format!("{err}");
        assert!(text.contains(o.processor) && text.contains(&format!("{}", other.gfx)), "{text}");
    }
    // Generic v6: gfx9-generic runs on gfx900 and gfx90c, not on gfx90a.
    let generic = CodeObject::parse(object("control/gfx9-generic-v6.co").bytes).unwrap();
    assert!(generic.check_target(&agent(9, 0, 0)).is_ok());
    assert!(generic.check_target(&agent(9, 0, 12)).is_ok());
    assert!(generic.check_target(&agent(9, 0, 10)).is_err());
    // Explicit features: built for xnack off and sramecc on.
    let strict =
        CodeObject::parse(object("control/gfx942-sramecc-on-xnack-off-v6.co").bytes).unwrap();
    let gfx942 = GfxVersion::new(9, 4, 2);
    let with = |xnack, sramecc| AgentTarget { gfx: gfx942, xnack, sramecc };
    assert!(strict.check_target(&with(AgentFeature::Off, AgentFeature::On)).is_ok());
    let err = strict.check_target(&with(AgentFeature::On, AgentFeature::On)).unwrap_err();
    assert_eq!(
        format!("{err}"),
        "code object is for gfx942:sramecc+:xnack-, the agent is gfx942:sramecc+:xnack+"
    );
    // HSA_OVERRIDE_GFX_VERSION: the check takes the effective version, so a gfx90a agent
    // whose override reads "9.0.0" runs the gfx900 object and no longer the gfx90a one.
    let effective = crate::topology::parse_override(b"9.0.0").unwrap();
    let overridden = AgentTarget::new(effective);
    let gfx900 = CodeObject::parse(object("control/gfx900.co").bytes).unwrap();
    let gfx90a = CodeObject::parse(object("control/gfx90a.co").bytes).unwrap();
    assert!(gfx900.check_target(&overridden).is_ok());
    assert!(gfx90a.check_target(&overridden).is_err());
}
