from django.apps import AppConfig


class McpBridgeConfig(AppConfig):
    name = "mcp_bridge"
    verbose_name = "Agent gateway (MCP, REST, stdio bridge)"
