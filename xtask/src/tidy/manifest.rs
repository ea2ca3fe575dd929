//! What the tidy rules read from a `Cargo.toml`: the package name and the packages it depends
//! on, with their lines. A line-based reader of the TOML the workspace writes (tables,
//! `key = value` lines, inline tables on one line), not a general TOML parser.

/// A dependency named by a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dependency {
    /// The package depended on (the `package = "…"` of a renamed dependency).
    pub(crate) package: String,
    /// 1-based line of its entry (or of its `[dependencies.name]` table).
    pub(crate) line: usize,
}

/// A package manifest, as far as tidy reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// `[package] name`; `None` for a virtual (workspace-only) manifest.
    pub(crate) name: Option<String>,
    /// Every dependency of every kind (normal, dev, build, target-specific).
    pub(crate) dependencies: Vec<Dependency>,
}

/// Which table a line is in.
enum Table {
    Package,
    /// `[dependencies]` and its dev/build/target forms: one entry per key.
    Dependencies,
    /// `[dependencies.name]`: the table is one dependency (index into `dependencies`).
    Dependency(usize),
    Other,
}

impl Manifest {
    /// Reads `text`.
    pub(crate) fn parse(text: &str) -> Self {
        let mut m = Manifest::default();
        let mut table = Table::Other;
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = strip_comment(raw).trim();
            if content.is_empty() {
                continue;
            }
            if let Some(header) = content.strip_prefix('[') {
                let header = header.trim_start_matches('[').trim_end_matches(']').trim();
                table = table_of(header, line, &mut m.dependencies);
                continue;
            }
            let Some((key, value)) = content.split_once('=') else { continue };
            let (key, value) = (unquote(key.trim()), value.trim());
            match table {
                Table::Package if key == "name" => m.name = Some(unquote(value).to_string()),
                Table::Dependencies => {
                    // `name = …`, `name.workspace = true`, `name = { package = "x", … }`.
                    let name = key.split('.').next().map_or(key, |k| unquote(k.trim()));
                    let package = inline_package(value).unwrap_or(name);
                    m.dependencies.push(Dependency { package: package.to_string(), line });
                }
                Table::Dependency(i) if key == "package" => {
                    m.dependencies[i].package = unquote(value).to_string();
                }
                _ => {}
            }
        }
        m
    }
}

/// The table a header opens (and the dependency it declares, for `[dependencies.name]`).
fn table_of(header: &str, line: usize, deps: &mut Vec<Dependency>) -> Table {
    if header == "package" {
        return Table::Package;
    }
    // `target.'cfg(…)'.dependencies` → `dependencies`.
    let header = match header.strip_prefix("target.") {
        Some(rest) => rest.rsplit_once("'.").or_else(|| rest.split_once('.')).map_or(rest, |p| p.1),
        None => header,
    };
    let (kind, name) = match header.split_once('.') {
        Some((kind, name)) => (kind, Some(unquote(name.trim()))),
        None => (header, None),
    };
    if !matches!(kind, "dependencies" | "dev-dependencies" | "build-dependencies") {
        return Table::Other;
    }
    match name {
        None => Table::Dependencies,
        Some(name) => {
            deps.push(Dependency { package: name.to_string(), line });
            Table::Dependency(deps.len() - 1)
        }
    }
}

/// The `package = "…"` of an inline table value, if any.
fn inline_package(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('{')?.trim_end().strip_suffix('}')?;
    inner.split(',').find_map(|field| {
        let (k, v) = field.split_once('=')?;
        (k.trim() == "package").then(|| unquote(v.trim()))
    })
}

fn unquote(s: &str) -> &str {
    s.trim_matches('"').trim_matches('\'')
}

/// `line` without a `#` comment (a `#` inside a string stays).
fn strip_comment(line: &str) -> &str {
    let mut in_string = None;
    for (i, c) in line.char_indices() {
        match (c, in_string) {
            ('"' | '\'', None) => in_string = Some(c),
            (q, Some(open)) if q == open => in_string = None,
            ('#', None) => return &line[..i],
            _ => {}
        }
    }
    line
}
