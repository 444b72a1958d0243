// Starts Swagger UI on /docs from this API's own OpenAPI document (a file, not an inline
// script: /docs's policy runs scripts of this site only).
window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true });
