//! What a simulated server checks before it answers, in the order a real server does:
//! the path, the key, the body, the model. A request that fails a check gets that
//! server's own refusal (its status, envelope and headers), as a client would see it.

use umi_core::llm::LlmError;
use umi_core::llm::transport::{HttpRequest, HttpResponse};

use super::format::{Parsed, Responder, ServerFormat};
use super::{Served, SimNetwork, headers};
use crate::rng::DeterministicRng;
use crate::trace::NetEvent;

impl SimNetwork {
    /// The request as `served`'s server reads it, with the responder told of it; or the
    /// refusal it gets (a 404 for a path or model the server does not have, a 401 for a
    /// key it does not take, a 400 for a body it cannot read).
    pub(super) fn admit(
        &self,
        served: &Served,
        request: &HttpRequest,
        format: &dyn ServerFormat,
        mut responder: Box<dyn Responder>,
        rng: &mut DeterministicRng,
    ) -> Result<(Parsed, Box<dyn Responder>), HttpResponse> {
        let endpoint = &served.endpoint;
        let below = &request.url[endpoint.base_url.len()..];
        let (path, query) = match below.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (below, None),
        };
        let Some(route) = format.route(path, query) else {
            let message = format!("{} {path}", request.method);
            let error = LlmError::BadRequest {
                status: Some(404),
                message,
            };
            return Err(self.refusal(served, responder, &error, None, rng).0);
        };
        responder.routed(&route);
        if let Some(error) = endpoint
            .api_key
            .as_deref()
            .and_then(|key| headers::key_refusal(format, request, key))
        {
            return Err(self.refusal(served, responder, &error, None, rng).0);
        }
        let parsed = match format.parse(request, endpoint.profile) {
            Ok(parsed) => parsed,
            Err(refused) => {
                self.trace.emit(NetEvent::BadRequest {
                    message: refused.message.clone(),
                });
                let error = LlmError::BadRequest {
                    status: Some(400),
                    message: refused.message.clone(),
                };
                return Err(self
                    .refusal(served, responder, &error, refused.param.as_deref(), rng)
                    .0);
            }
        };
        responder.parsed(&parsed);
        if let Some(error) = self.model_refusal(served, &parsed) {
            return Err(self.refusal(served, responder, &error, None, rng).0);
        }
        Ok((parsed, responder))
    }

    /// The "model not found" a server gives a request for a model it does not serve
    /// (unless its profile serves one model whatever the request names:
    /// [`super::Profile::checks_model`]).
    fn model_refusal(&self, served: &Served, parsed: &Parsed) -> Option<LlmError> {
        let endpoint = &served.endpoint;
        let served_model = &endpoint.model.model_ref().model;
        let checks_model = endpoint.profile.checks_model();
        let asked = &parsed.request.model;
        if !checks_model || asked.is_empty() || asked == served_model {
            return None;
        }
        self.trace.emit(NetEvent::ModelNotFound {
            base_url: endpoint.base_url.clone(),
            asked: asked.clone(),
            served: served_model.clone(),
        });
        Some(LlmError::ModelNotFound {
            status: Some(404),
            message: asked.clone(),
        })
    }
}
