//! A call's answer as JSON text, as the call layer carries it.
//!
//! jsonrpsee's `MethodResponse` checks the text of every answer it is built from by parsing
//! it again (`RawValue::from_string`): about a tenth of a cheap read's CPU, and as much again
//! as serializing a large answer. quarry's methods answer with their result already
//! serialized, so a `Reply` is made from it without that parse; only jsonrpsee's own body
//! handling (batches, bodies that are not one call) still gets a `MethodResponse`, from
//! `into_jsonrpsee`.

use jsonrpsee::{
    Extensions, MethodResponse, ResponsePayload,
    types::{
        ErrorObject, Id, Response,
        error::{OVERSIZED_RESPONSE_CODE, OVERSIZED_RESPONSE_MSG},
    },
};
use serde_json::value::RawValue;

/// One call's answer: the whole response object.
#[derive(Debug)]
pub struct Reply {
    json: String,
    /// The error's code, for an error.
    error_code: Option<i32>,
    extensions: Extensions,
}

impl Reply {
    /// `result` as the answer to call `id`; past `max_bytes` in all, the error jsonrpsee gives
    /// an answer too large.
    pub fn result(id: Id<'_>, result: &RawValue, max_bytes: usize) -> Self {
        let payload = jsonrpsee::types::ResponsePayload::success(result);
        let json = serde_json::to_string(&Response::new(payload, id.clone()));
        match json {
            Ok(json) if json.len() <= max_bytes => Self {
                json,
                error_code: None,
                extensions: Extensions::new(),
            },
            _ => {
                let data = format!("Exceeded max limit of {max_bytes}");
                Self::error(
                    id,
                    ErrorObject::owned(OVERSIZED_RESPONSE_CODE, OVERSIZED_RESPONSE_MSG, Some(data)),
                )
            }
        }
    }

    pub fn error<'a>(id: Id<'_>, error: impl Into<ErrorObject<'a>>) -> Self {
        let error: ErrorObject<'a> = error.into();
        let code = error.code();
        let payload = jsonrpsee::types::ResponsePayload::<()>::error_borrowed(error);
        // An error object always serializes: its data is already JSON.
        let json = serde_json::to_string(&Response::new(payload, id)).unwrap_or_default();
        Self {
            json,
            error_code: Some(code),
            extensions: Extensions::new(),
        }
    }

    /// The same answer as jsonrpsee's type, for its body handling: parses the text once.
    pub fn into_jsonrpsee(self) -> MethodResponse {
        #[derive(serde::Deserialize)]
        struct Parts<'a> {
            #[serde(borrow)]
            id: Id<'a>,
            #[serde(default)]
            result: Option<Box<RawValue>>,
            #[serde(default, borrow)]
            error: Option<ErrorObject<'a>>,
        }
        let response = match serde_json::from_str::<Parts<'_>>(&self.json) {
            Ok(Parts {
                id,
                error: Some(error),
                ..
            }) => MethodResponse::error(id, error),
            Ok(Parts { id, result, .. }) => {
                // `"result":null` reads as no result.
                let result = result.unwrap_or_else(|| RawValue::NULL.to_owned());
                MethodResponse::response(id, ResponsePayload::success(result), usize::MAX)
            }
            Err(e) => MethodResponse::error(
                Id::Null,
                ErrorObject::owned(
                    jsonrpsee::types::error::INTERNAL_ERROR_CODE,
                    format!("unreadable answer: {e}"),
                    None::<()>,
                ),
            ),
        };
        response.with_extensions(self.extensions)
    }

    pub fn is_error(&self) -> bool {
        self.error_code.is_some()
    }

    pub fn error_code(&self) -> Option<i32> {
        self.error_code
    }

    pub fn json(&self) -> &str {
        &self.json
    }

    pub fn into_parts(self) -> (String, Extensions) {
        (self.json, self.extensions)
    }

    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    pub fn with_extensions(self, extensions: Extensions) -> Self {
        Self { extensions, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn a_result_reads_as_jsonrpsee_writes_it() {
        let result = raw(r#"{"a":[1,"x"]}"#);
        let ours = Reply::result(Id::Number(7), &result, usize::MAX);
        let theirs = MethodResponse::response(
            Id::Number(7),
            ResponsePayload::success(result.clone()),
            usize::MAX,
        );
        assert_eq!(ours.json(), theirs.as_json().get());
        assert!(!ours.is_error());
        let back = ours.into_jsonrpsee();
        assert_eq!(back.as_json().get(), theirs.as_json().get());

        let id = Id::Str("a\"b".into());
        let ours = Reply::result(id.clone(), &raw("null"), usize::MAX);
        let theirs =
            MethodResponse::response(id, ResponsePayload::success(raw("null")), usize::MAX);
        assert_eq!(ours.json(), theirs.as_json().get());
        assert_eq!(
            ours.into_jsonrpsee().as_json().get(),
            theirs.as_json().get()
        );
    }

    #[test]
    fn an_answer_too_large_is_jsonrpsees_error() {
        let result = raw(r#""0123456789""#);
        for max in [10, 40, 41, 100] {
            let ours = Reply::result(Id::Number(1), &result, max);
            let theirs = MethodResponse::response(
                Id::Number(1),
                ResponsePayload::success(result.clone()),
                max,
            );
            assert_eq!(ours.json(), theirs.as_json().get(), "max {max}");
            assert_eq!(ours.error_code(), theirs.as_error_code(), "max {max}");
        }
    }

    #[test]
    fn an_error_reads_as_jsonrpsee_writes_it() {
        let error = ErrorObject::owned(3, "execution reverted", Some("0x08c379a0"));
        let ours = Reply::error(Id::Number(2), error.clone());
        let theirs = MethodResponse::error(Id::Number(2), error);
        assert_eq!(ours.json(), theirs.as_json().get());
        assert_eq!(ours.error_code(), Some(3));
        let back = ours.into_jsonrpsee();
        assert_eq!(back.as_json().get(), theirs.as_json().get());
        assert_eq!(back.as_error_code(), Some(3));
    }
}
