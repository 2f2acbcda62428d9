//! What the model is offered of a server's tools (pure): the name
//! `mcp__<server>__<tool>` in the characters all three wire formats accept
//! (`[A-Za-z0-9_-]{1,64}`), the description bounded, the input schema in a
//! shape every provider takes, and which tools had to be left out and why.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::model::mcp::TOOL_PREFIX as PREFIX;
const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 2_000;
/// A schema larger than this is more prompt than tool: the tool is left out.
const MAX_SCHEMA_BYTES: usize = 32 * 1024;

/// One tool as a server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// The server says the tool only reads (`readOnlyHint: true`).
    pub read_only: bool,
}

/// A tool the model is offered.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered {
    /// `mcp__<server>__<tool>`, as the model calls it.
    pub exposed: String,
    pub server: String,
    /// The name the server knows it by.
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
}

impl Offered {
    /// The tool as the model is offered it.
    pub fn spec(&self) -> crate::runtime::provider::ToolSpec {
        crate::runtime::provider::ToolSpec {
            name: self.exposed.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            freeform_field: None,
        }
    }
}

/// A tool left out, and why (shown by `holon mcp list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub server: String,
    pub tool: String,
    pub reason: String,
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The name the model calls `tool` of `server` by. Kept as it is where
/// it fits; otherwise other characters become `_` and a name too long is
/// cut and ends with a digest of the original, so two long names stay
/// apart.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| if name_char(c) { c } else { '_' })
        .collect();
    let name = format!("{PREFIX}{server}__{clean}");
    if name.len() <= MAX_NAME {
        return name;
    }
    let digest = Sha256::digest(tool.as_bytes());
    let tail: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let keep = MAX_NAME - tail.len() - 1;
    format!("{}_{tail}", &name[..keep])
}

/// The schema as offered: an object schema, without `$schema`; `Err`
/// says why the tool cannot be offered.
pub fn offered_schema(schema: &Value) -> Result<Value, String> {
    let Some(obj) = schema.as_object() else {
        return Err("its input schema is not a JSON object".into());
    };
    let mut obj = obj.clone();
    obj.remove("$schema");
    match obj.get("type") {
        None => {
            obj.insert("type".into(), json!("object"));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "its input schema's type is {other}, and tools take an object"
            ))
        }
    }
    if obj.get("properties").is_some_and(|p| !p.is_object()) {
        return Err("its input schema's `properties` is not an object".into());
    }
    if !obj.contains_key("properties") {
        obj.insert("properties".into(), json!({}));
    }
    let out = Value::Object(obj);
    let size = out.to_string().len();
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is {size} bytes (at most {MAX_SCHEMA_BYTES})"
        ));
    }
    Ok(out)
}

fn bounded(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_DESCRIPTION - 1).collect();
    cut.push('…');
    cut
}

/// The catalog entries for every server's tools, in server then tool
/// order; names that collide keep the first and leave out the rest.
pub fn offer(listed: &[(String, Vec<Listed>)]) -> (Vec<Offered>, Vec<Dropped>) {
    let mut offered: Vec<Offered> = Vec::new();
    let mut dropped = Vec::new();
    let mut taken: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (server, tools) in listed {
        for t in tools {
            let drop = |reason: String| Dropped {
                server: server.clone(),
                tool: t.name.clone(),
                reason,
            };
            let schema = match offered_schema(&t.input_schema) {
                Ok(s) => s,
                Err(why) => {
                    dropped.push(drop(why));
                    continue;
                }
            };
            let exposed = exposed_name(server, &t.name);
            if let Some((s, other)) = taken.get(&exposed) {
                dropped.push(drop(format!(
                    "its name `{exposed}` is already taken by `{other}` of server `{s}`"
                )));
                continue;
            }
            taken.insert(exposed.clone(), (server.clone(), t.name.clone()));
            offered.push(Offered {
                exposed,
                server: server.clone(),
                tool: t.name.clone(),
                description: bounded(&t.description),
                input_schema: schema,
                read_only: t.read_only,
            });
        }
    }
    (offered, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, schema: Value) -> Listed {
        Listed {
            name: name.into(),
            description: "d".into(),
            input_schema: schema,
            read_only: false,
        }
    }

    #[test]
    fn names_are_kept_where_they_fit() {
        assert_eq!(exposed_name("gh", "create_issue"), "mcp__gh__create_issue");
        assert_eq!(exposed_name("gh", "get-file"), "mcp__gh__get-file");
    }

    #[test]
    fn other_names_are_made_to_fit() {
        assert_eq!(exposed_name("fs", "read.file"), "mcp__fs__read_file");
        let long_a = exposed_name("fs", &"a".repeat(80));
        let long_b = exposed_name("fs", &format!("{}b", "a".repeat(79)));
        for n in [&long_a, &long_b] {
            assert_eq!(n.len(), 64);
            assert!(n.chars().all(name_char));
        }
        assert_ne!(long_a, long_b);
    }

    #[test]
    fn schemas_are_object_schemas() {
        let s = offered_schema(&json!({"$schema": "x", "properties": {"a": {"type": "string"}}}));
        assert_eq!(
            s,
            Ok(json!({"type": "object", "properties": {"a": {"type": "string"}}}))
        );
        assert!(offered_schema(&json!({"type": "string"})).is_err());
        assert!(offered_schema(&json!([1])).is_err());
        assert!(offered_schema(&json!({"properties": 3})).is_err());
        let huge = json!({"type": "object", "description": "x".repeat(40_000)});
        assert!(offered_schema(&huge).is_err());
    }

    #[test]
    fn collisions_keep_the_first_and_say_so() {
        let (offered, dropped) = offer(&[(
            "fs".into(),
            vec![
                listed("read.file", json!({})),
                listed("read_file", json!({})),
                listed("bad", json!({"type": "array"})),
            ],
        )]);
        let names: Vec<&str> = offered.iter().map(|o| o.tool.as_str()).collect();
        assert_eq!(names, ["read.file"]);
        assert_eq!(dropped.len(), 2);
        assert!(dropped[0].reason.contains("already taken by `read.file`"));
        assert!(dropped[1].reason.contains("type"));
    }
}
